/**
 * Where the project's files are, independent of the directory `cdk` or the tests run from: a
 * checkout (these modules run from source, lib/cdk/*.ts) or the package installed in an app's
 * node_modules (compiled, dist/lib/cdk/*.js).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(import.meta.url);

/** The directory of plangate's package.json. */
export const PROJECT_ROOT = ((): string => {
  for (let dir = dirname(HERE); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'plangate'
    )
      return dir;
  }
  throw new Error(`plangate's package.json is in no directory above ${HERE}`);
})();

/**
 * The lock file that pins what the Lambda bundles contain: a checkout's. npm never packs a
 * package-lock.json, so an installed package has none: what it bundles is what the app's own
 * lock file installed, and CDK finds that one as for any NodejsFunction.
 */
export const LOCK_FILE: string | undefined = ((): string | undefined => {
  const file = join(PROJECT_ROOT, 'package-lock.json');
  return existsSync(file) ? file : undefined;
})();
export const LAMBDAS_DIR = join(PROJECT_ROOT, 'lambdas');
export const EXAMPLES_DIR = join(PROJECT_ROOT, 'examples');

/**
 * The module esbuild bundles for a catalog entry (`lambdas/gate.ts`): the TypeScript source when
 * these constructs run from source, tsc's output beside them (dist/lambdas/gate.js) when they run
 * compiled, as installed (the package ships dist, not the sources).
 */
export function handlerEntry(entry: `lambdas/${string}.ts`): string {
  return HERE.endsWith('.ts')
    ? join(PROJECT_ROOT, entry)
    : join(PROJECT_ROOT, 'dist', entry.replace(/\.ts$/, '.js'));
}
