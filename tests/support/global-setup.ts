/**
 * Names the test run (PLANGATE_TEST_RUN, inherited by every worker) so that files can share what
 * is costly to make once per run (tests/support/cdk-synth.ts), and removes it after the run.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const run = randomUUID();
  process.env.PLANGATE_TEST_RUN = run;
  return () => rmSync(join(tmpdir(), `plangate-cdk-out-${run}`), { recursive: true, force: true });
}
