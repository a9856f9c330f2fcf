/**
 * The sandbox of plan processes (lib/runtime/sandbox): the environment's allow-list, bubblewrap's
 * layout, and runProcess under it on this machine (bwrap is installed in CI: .ci/run).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRefusedName, planEnvironment } from '../../lib/runtime/sandbox/environment.ts';
import {
  bwrapArgs,
  configureSandbox,
  PASS_ENV_ENV,
  refusedWrites,
  sandboxSentence,
  sandboxStatus,
  WorkspacePlacementError,
} from '../../lib/runtime/sandbox/sandbox.ts';
import { runProcess } from '../../lib/runtime/shared/process.ts';

const CREDENTIAL_NAMES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_SECURITY_TOKEN',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_LAMBDA_RUNTIME_API',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
  'AWS_PROFILE',
];

describe('planEnvironment', () => {
  it('copies only the allow-list from the harness, never a credential, even when an operator passes it on', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,20}$/), fc.string({ maxLength: 20 })),
        fc.constantFrom(...CREDENTIAL_NAMES),
        (harness, credential) => {
          const env = planEnvironment({
            harness: { ...harness, [credential]: 'secret', PATH: '/usr/bin' },
            passed: [credential, ...Object.keys(harness)],
          });
          expect(env[credential]).toBeUndefined();
          expect(env.PATH).toBe('/usr/bin');
          for (const name of Object.keys(env)) expect(isRefusedName(name)).toBe(false);
        },
      ),
    );
    expect(planEnvironment({ harness: { PLANGATE_STORE: '/s', HOME: '/root', SECRET_TOKEN: 'x' } })).toEqual({
      HOME: '/root',
    });
  });

  it('gives the plan what it declared, over the allow-list', () => {
    expect(
      planEnvironment({
        harness: { PATH: '/bin' },
        given: { PATH: '/opt/bin', DECLARED: 'yes' },
        home: '/h',
      }),
    ).toEqual({ PATH: '/opt/bin', DECLARED: 'yes', HOME: '/h' });
  });
});

describe('bwrapArgs', () => {
  it('binds the writable directories over the read-only root, then hides the store over them', async () => {
    const workspace = await mkdtemp(join(tmpdir(), 'plangate-sandbox-'));
    const store = join(workspace, '.plangate');
    await writeFile(join(workspace, 'key'), 'k');
    await mkdir(store);
    const args = bwrapArgs({
      writable: [workspace, join(workspace, 'missing')],
      hidden: [store, join(workspace, 'key'), '/nowhere'],
      network: 'none',
      cwd: workspace,
      command: 'true',
    });
    const at = (flag: string, path: string) => args.findIndex((a, i) => a === flag && args[i + 1] === path);
    expect(args.slice(0, 3)).toEqual(['--ro-bind', '/', '/']);
    expect(at('--bind', workspace)).toBeGreaterThan(args.indexOf('/tmp'));
    expect(at('--tmpfs', store)).toBeGreaterThan(at('--bind', workspace));
    expect(args).toContain(join(workspace, 'key'));
    expect(args.join(' ')).not.toContain('missing');
    expect(args.join(' ')).not.toContain('/nowhere');
    for (const flag of ['--unshare-net', '--unshare-pid', '--die-with-parent', '--new-session'])
      expect(args).toContain(flag);
    expect(args[args.indexOf('--cap-drop') + 1]).toBe('ALL');
    // No startup file: bash reads ~/.bashrc for `-c` when its stdin is a socket (Node's pipes).
    expect(args.slice(-5)).toEqual(['bash', '--noprofile', '--norc', '-c', 'true']);
    expect(bwrapArgs({ writable: [], hidden: [], network: 'host', cwd: '/', command: 'true' })).not.toContain(
      '--unshare-net',
    );
  });
});

describe.runIf(sandboxStatus().kind === 'bwrap')('runProcess in the sandbox', () => {
  it('writes in its cwd, is refused elsewhere (and says so), has no network and leaves no setsid child', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'plangate-sandbox-'));
    const outside = await mkdtemp('/var/tmp/plangate-sandbox-');
    const result = await runProcess({
      command: `echo in > in.txt; echo out > ${outside}/out.txt; (setsid bash -c 'sleep 1; echo late > late.txt' &); node -e 'fetch("http://1.1.1.1").then(() => process.exit(0), () => process.exit(7))'; echo net=$?`,
      cwd,
      env: { AWS_SECRET_ACCESS_KEY: 'declared-by-the-plan-only' },
    });
    expect(result.sandboxed).toBe(true);
    expect(await readFile(join(cwd, 'in.txt'), 'utf8')).toBe('in\n');
    expect(existsSync(join(outside, 'out.txt'))).toBe(false);
    expect(result.refusedWrites).toEqual([expect.stringContaining('Read-only file system')]);
    expect(result.stdout).toContain('net=7');
    await new Promise((r) => setTimeout(r, 1500));
    expect(existsSync(join(cwd, 'late.txt'))).toBe(false);
  });

  it("runs no startup file: not the harness's BASH_ENV, even passed on by name", async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'plangate-sandbox-'));
    await writeFile(join(cwd, 'env.sh'), `echo ran > '${cwd}/marker'\n`);
    const saved = { BASH_ENV: process.env.BASH_ENV, pass: process.env[PASS_ENV_ENV] };
    process.env.BASH_ENV = join(cwd, 'env.sh');
    process.env[PASS_ENV_ENV] = 'BASH_ENV';
    try {
      const result = await runProcess({ command: 'echo "${BASH_ENV-unset}"', cwd });
      expect(result.stdout).toBe('unset\n');
      expect(existsSync(join(cwd, 'marker'))).toBe(false);
    } finally {
      for (const [name, value] of [
        ['BASH_ENV', saved.BASH_ENV],
        [PASS_ENV_ENV, saved.pass],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
  });
});

describe('configureSandbox', () => {
  it('refuses a workspace that is, or is inside, a directory plan code may not see', () => {
    for (const workspace of ['/srv/store', '/srv/store/', '/srv/store/a/b', '/srv/store/../store/x'])
      expect(() => configureSandbox({ workspace, hidden: ['/tmp/keys', '/srv/store'] })).toThrow(
        WorkspacePlacementError,
      );
    // A sibling whose name only starts like the store is not inside it.
    expect(() => configureSandbox({ workspace: '/srv/store-work', hidden: ['/srv/store'] })).not.toThrow();
  });
});
describe.runIf(sandboxStatus().kind === 'bwrap')(
  'runProcess in the sandbox, as whatever user runs the harness',
  () => {
    // CI and many containers run the harness as root: bwrap then keeps every capability unless told
    // otherwise, and a process holding CAP_SYS_ADMIN unmounts what hides the store, remounts / read-write
    // and uncovers the host's /proc (the harness's environment, its network namespace).
    it('holds no capability: it cannot unmount the hidden store, remount / or lift its own /proc', async () => {
      const cwd = await mkdtemp(join(tmpdir(), 'plangate-sandbox-'));
      const base = await mkdtemp('/var/tmp/plangate-sandbox-');
      const store = join(base, 'store');
      await mkdir(store);
      await writeFile(join(store, 'approval-signing.key'), 'the-link-key');
      configureSandbox({ workspace: cwd, hidden: [store] });
      const result = await runProcess({
        command: [
          'grep CapEff /proc/self/status',
          `umount ${store} 2>/dev/null; umount -l ${store} 2>/dev/null; cat ${store}/approval-signing.key`,
          `mount -o remount,rw / 2>/dev/null; echo out > ${base}/out.txt`,
          'umount -l /proc 2>/dev/null; ls /proc | grep -c "^[0-9]"',
        ].join('; '),
        cwd,
      });
      expect(result.sandboxed).toBe(true);
      expect(result.stdout).toMatch(/CapEff:\s+0+\n/);
      expect(result.stdout).not.toContain('the-link-key');
      expect(existsSync(join(base, 'out.txt'))).toBe(false);
      // Its own PID namespace: bash and the few processes of this command, never the machine's.
      expect(Number(result.stdout.trim().split('\n').at(-1))).toBeLessThan(5);
    });
  },
);

describe('refusedWrites', () => {
  it('picks the lines of a read-only file system', () => {
    expect(refusedWrites('ok\nbash: /etc/x: Read-only file system\ncp: EROFS here\n')).toEqual([
      'bash: /etc/x: Read-only file system',
      'cp: EROFS here',
    ]);
  });
});

describe('what every gate says plan code runs as', () => {
  it('names the plan-process function on AWS, and says there is no bubblewrap there', () => {
    expect(sandboxSentence({ kind: 'function', function: 'Plangate-PlanProcess-1A2B' })).toBe(
      "steps run in the plan-process function Plangate-PlanProcess-1A2B, as a role without the harness's authority (no bubblewrap there: the function's own network, declared hosts not enforced)",
    );
    expect(
      sandboxSentence({ kind: 'none', user: 'sbx_user1051', reason: 'bubblewrap (bwrap) is not installed' }),
    ).toBe('steps run unsandboxed as sbx_user1051 (bubblewrap (bwrap) is not installed)');
  });
});
