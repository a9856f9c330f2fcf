/**
 * How tests and benchmarks start the real `plangate` CLI as a child process. In a test run,
 * tests/support/global-setup.ts bundles the CLI from the sources once (as `npm run build` does)
 * and names the bundle in PLANGATE_TEST_CLI: a run then starts in about 2 s instead of 5 (tsx
 * compiles and links some 500 modules each start). Anywhere else (`npm run reliability`) the
 * sources run through tsx. Either way it is this checkout's code, loaded by this very process,
 * so kill -9 hits the harness itself, not a wrapper.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const REPO = resolve(import.meta.dirname, '../..');

/** The variable that names the bundled CLI of this test run. */
export const TEST_CLI_ENV = 'PLANGATE_TEST_CLI';

const bundle = process.env[TEST_CLI_ENV];

/** Node's arguments that start the CLI (the command's own arguments follow). */
export const PLANGATE_NODE_ARGS: readonly string[] =
  bundle && existsSync(bundle)
    ? [bundle]
    : [
        '--import',
        pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href,
        join(REPO, 'bin/plangate.ts'),
      ];

/** The same as a shell command line (for scripts that call `$CLI complete …`). */
export const PLANGATE_SHELL_COMMAND: string = [process.execPath, ...PLANGATE_NODE_ARGS]
  .map((word) => `'${word.replaceAll("'", `'\\''`)}'`)
  .join(' ');
