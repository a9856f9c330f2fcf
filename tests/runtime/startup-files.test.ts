/**
 * The shells the harness starts read no startup file: not the operator's ~/.bashrc (which bash
 * reads for `bash -c` when its stdin is a socket, as Node's pipes are, and SHLVL is unset, as in
 * a plan's environment), not ~/.bash_profile or ~/.profile, not BASH_ENV. Unsandboxed on purpose
 * (PLANGATE_SANDBOX=off, read once per process: this file's own), where HOME is the operator's.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PASS_ENV_ENV, SANDBOX_ENV, sandboxStatus } from '../../lib/runtime/sandbox/sandbox.ts';
import { runProcess } from '../../lib/runtime/shared/process.ts';

const saved = { ...process.env };
let home: string;
let markers: string;

beforeAll(async () => {
  process.env[SANDBOX_ENV] = 'off';
  home = await mkdtemp(join(tmpdir(), 'plangate-home-'));
  markers = await mkdtemp(join(tmpdir(), 'plangate-markers-'));
  // Each startup file leaves a marker, and stalls as the operator's did.
  const startup = (name: string) => `echo "$0 $$" > '${markers}/${name}'; sleep 5\n`;
  for (const name of ['.bashrc', '.bash_profile', '.profile', '.bash_login'])
    await writeFile(join(home, name), startup(name));
  await writeFile(join(home, 'bash-env.sh'), startup('BASH_ENV'));
  await writeFile(join(home, 'env.sh'), startup('ENV'));
});

afterEach(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
});

describe('the shells the harness starts', () => {
  it('run unsandboxed here', () => {
    expect(sandboxStatus().kind).toBe('none');
  });

  it('read no startup file of the operator, nor BASH_ENV or ENV, even when passed on by name', async () => {
    process.env.HOME = home;
    process.env.BASH_ENV = join(home, 'bash-env.sh');
    process.env.ENV = join(home, 'env.sh');
    delete process.env.SHLVL;
    process.env[PASS_ENV_ENV] = 'BASH_ENV,ENV';
    const started = performance.now();
    const result = await runProcess({
      command: 'echo "home=$HOME bash_env=${BASH_ENV-unset} env=${ENV-unset}"',
    });
    expect(result.stdout).toBe(`home=${home} bash_env=unset env=unset\n`);
    expect(result.exitCode).toBe(0);
    expect(performance.now() - started).toBeLessThan(4000);
    // The watchdog (a bash of the harness's own, with the harness's environment) has had its time too.
    await new Promise((r) => setTimeout(r, 300));
    expect(await readdir(markers)).toEqual([]);
  });

  it('still run what the plan itself declares as BASH_ENV (data the gate showed)', async () => {
    process.env.HOME = home;
    const declared = join(markers, 'declared.sh');
    await writeFile(declared, 'DECLARED=yes\n');
    const result = await runProcess({ command: 'echo "declared=$DECLARED"', env: { BASH_ENV: declared } });
    expect(result.stdout).toBe('declared=yes\n');
    expect(existsSync(join(markers, '.bashrc'))).toBe(false);
  });
});
