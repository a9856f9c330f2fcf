/**
 * `npm run build`, second half: replaces tsc's dist/bin/plangate.js with one ESM bundle of the CLI
 * (plangate's modules with zod, yaml and jsonata), split into chunks under dist/bin/chunks/ so each
 * command still loads only what it uses. Node's ESM loader pays per module file: unbundled,
 * `plangate validate` loads about 190 files (95 of them zod's) and spends most of its time
 * resolving and linking them. dist/lib and dist/lambdas stay as tsc wrote them.
 */
import { chmodSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The packages bundled with plangate's own modules: pure JavaScript that every command loads and
 * that Node would otherwise load file by file (zod alone is 95 files). Every other package stays
 * in node_modules, loaded as it is: many find their own files at run time (WebAssembly grammars,
 * Cedar, LevelDB's native binding, the AWS SDK's per-service modules).
 */
export const BUNDLED_PACKAGES: ReadonlySet<string> = new Set(['zod', 'yaml', 'jsonata']);

/** `@scope/name/deep/path` → `@scope/name`; `name/deep` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

const onlyBundledPackages: Plugin = {
  name: 'only-bundled-packages',
  setup(build) {
    // A bare specifier (not ./ or /): a package, or a Node built-in.
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      BUNDLED_PACKAGES.has(packageOf(args.path)) ? undefined : { path: args.path, external: true },
    );
  },
};

export async function bundleCli(outDir = join(ROOT, 'dist')): Promise<void> {
  await build({
    entryPoints: { plangate: join(ROOT, 'bin/plangate.ts') },
    outdir: join(outDir, 'bin'),
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [onlyBundledPackages],
    // CommonJS packages inside an ESM bundle still call require() for Node's built-ins.
    banner: {
      js: "import { createRequire as __plangateRequire } from 'node:module'; const require = __plangateRequire(import.meta.url);",
    },
    sourcemap: true,
    logLevel: 'warning',
  });
  // npm links `bin` entries as they are packed: without the exec bit, `npx plangate` on a fresh
  // build fails with "Permission denied" (esbuild keeps the shebang but writes mode 0644).
  chmodSync(join(outDir, 'bin/plangate.js'), 0o755);
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleCli(process.argv[2]);
}
