/**
 * A step that declares hosts (issue 29: "network to the outside only where the plan declares it,
 * and then shown at the gate"), through the real CLI: the gate says what it may reach; in its
 * sandbox the declared host's request reaches the harness's proxy, while an undeclared host, a
 * loopback address (however spelled), the run's own endpoints and raw TCP all fail; the proxy's
 * records are in the step's TASK_COMPLETED.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../../lib/runtime/sandbox/sandbox.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { runPlan, workDir } from './cli.ts';

/** Each attempt's outcome lands in attempts/<name>: `reached` or `refused <exit code> <what it said>`. */
const STEP = `for _ in $(seq 1 200); do [ -s endpoints.txt ] && break; sleep 0.05; done
mkdir -p attempts
note() { if [ "$2" = 0 ]; then echo reached > "attempts/$1"; else echo "refused $2 $(cat attempts/err)" > "attempts/$1"; fi; }
curl -sS -o /dev/null -w '%{http_code}' --fail http://allowed.test/ 2>attempts/err; note declared $?
curl -sS -o /dev/null https://evil.example/ 2>attempts/err; note undeclared $?
curl -sS -o /dev/null --fail http://127.0.0.1/ 2>attempts/err; note loopback $?
curl -sS -o /dev/null --fail http://0x7f.1/ 2>attempts/err; note loopback-spelled $?
for url in $(cat endpoints.txt); do
  port=\${url##*:}; port=\${port%%/*}
  curl -sS -o /dev/null -m 3 --fail "$url" 2>attempts/err; note "endpoint-proxied-$port" $?
  curl -sS -o /dev/null -m 3 --noproxy '*' "$url" 2>attempts/err; note "endpoint-direct-$port" $?
  (exec 3<"/dev/tcp/127.0.0.1/$port") 2>attempts/err; note "endpoint-tcp-$port" $?
done
(exec 3</dev/tcp/1.1.1.1/443) 2>attempts/err; note outside-tcp $?
node -e 'require("net").connect(443, "1.1.1.1").on("connect", () => process.exit(0)).on("error", () => process.exit(1))' 2>attempts/err; note node-tcp $?
touch attempts/done`;

const PLAN = {
  id: 'declared-network',
  objective: 'Fetch from a declared host only',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'fetch',
      description: 'Fetch the notes from the declared host',
      tool: 'shell',
      args: { command: STEP },
      network: { hosts: ['allowed.test'] },
      contract: { kind: 'command', command: 'test -f attempts/done' },
    },
  ],
};

describe.runIf(sandboxStatus().kind === 'bwrap')('a step that declares hosts', { timeout: 120_000 }, () => {
  it('reaches only them, through the proxy; the rest fails, is recorded, and the gate said so', async () => {
    const ws = await workDir();
    const store = join(ws, 'store');
    await mkdir(join(ws, 'attempts'));
    await writeFile(join(ws, 'plan.json'), JSON.stringify(PLAN));
    const run = runPlan('plan.json', ws, ['--approve', '--store', store]);
    await run.until('the execution started', () => /Execution: arn:\S+/.test(run.stderr));
    const session = JSON.parse(readFileSync(storePaths(store).session, 'utf8')) as Record<string, unknown>;
    const endpoints = Object.values(session).filter(
      (v): v is string => typeof v === 'string' && v.startsWith('http'),
    );
    expect(endpoints.length).toBeGreaterThanOrEqual(4);
    await writeFile(join(ws, 'endpoints.txt'), endpoints.join(' '));
    expect(await run.exited, run.stderr).toBe(0);

    // The gate showed what the step may reach, and that it runs sandboxed behind the proxy.
    expect(run.stderr).toContain("may reach: allowed.test (through plangate's proxy)");
    expect(run.stderr).toContain(
      'no network except to the hosts a step declares (through the harness proxy)',
    );

    const attempt = (name: string) => readFileSync(join(ws, 'attempts', name), 'utf8');
    // The declared host reached the proxy (which could not resolve it: .test is not in DNS).
    expect(attempt('declared')).toMatch(/^refused .*502/);
    for (const name of ['undeclared', 'loopback', 'loopback-spelled', 'outside-tcp', 'node-tcp'])
      expect(attempt(name), name).toMatch(/^refused/);
    for (const url of endpoints) {
      const port = new URL(url).port;
      for (const how of ['proxied', 'direct', 'tcp'])
        expect(attempt(`endpoint-${how}-${port}`), `${how} ${url}`).toMatch(/^refused/);
    }

    const completed = run.events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'fetch');
    type Records = { network?: { request: string; allowed: boolean; detail: string }[] };
    const network = ((completed?.details ?? {}) as Records).network;
    expect(network?.find((r) => r.request === 'GET http://allowed.test/')).toMatchObject({
      allowed: true,
      detail: expect.stringMatching(/could not resolve allowed\.test/),
    });
    expect(network?.find((r) => r.request === 'CONNECT evil.example:443')).toMatchObject({ allowed: false });
    expect(network?.find((r) => r.request === 'GET http://127.0.0.1/')).toMatchObject({ allowed: false });
    // Every endpoint asked through the proxy was refused, and recorded.
    for (const url of endpoints)
      expect(
        network?.some((r) => !r.allowed && r.request.includes(new URL(url).host)),
        url,
      ).toBe(true);
    expect(network?.filter((r) => r.allowed)).toHaveLength(1);
  });
});
