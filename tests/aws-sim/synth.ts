/** `npx cdk synth -o <dir>` as an operator runs it: offline, no AWS credentials, no Docker. */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../lib/cdk/paths.ts';

/** Synthesizes the app into a fresh directory and returns it (cdk.out: template and asset directories). */
export async function synthesizeCdkOut(): Promise<string> {
  const outdir = mkdtempSync(join(tmpdir(), 'plangate-iam-sim-'));
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('AWS_')) env[key] = value;
  const child = spawn('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', outdir], {
    cwd: PROJECT_ROOT,
    env: { ...env, AWS_EC2_METADATA_DISABLED: 'true', CDK_DOCKER: 'docker-is-not-used' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`npx cdk synth exited ${code}:\n${stderr}`);
  return outdir;
}
