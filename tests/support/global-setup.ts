/**
 * Once per test run, before any file: names the run (PLANGATE_TEST_RUN, inherited by every
 * worker) so that files can share what is costly to make (tests/support/cdk-synth.ts), and bundles
 * the CLI from the sources for the files that start it (tests/support/plangate-cli.ts). Both are
 * removed after the run.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleCli } from '../../scripts/bundle-cli.ts';
import { TEST_CLI_ENV } from './plangate-cli.ts';

const REPO = resolve(import.meta.dirname, '../..');

export default async function setup(): Promise<() => void> {
  const run = randomUUID();
  process.env.PLANGATE_TEST_RUN = run;
  // Beside bin/ and lib/ as dist/ is, so the bundle finds policies/ and node_modules as the built CLI does.
  const cli = join(REPO, `.test-cli-${run}`);
  await bundleCli(cli);
  process.env[TEST_CLI_ENV] = join(cli, 'bin/plangate.js');
  return () => {
    rmSync(join(tmpdir(), `plangate-cdk-out-${run}`), { recursive: true, force: true });
    rmSync(cli, { recursive: true, force: true });
  };
}
