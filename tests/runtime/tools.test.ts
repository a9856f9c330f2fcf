import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runProcess } from '../../lib/runtime/shared/process.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import type { ToolContext } from '../../lib/runtime/tools/types.ts';

const ctx = (over: Partial<ToolContext> = {}): ToolContext => ({
  stepId: 'step1',
  subscriptions: [],
  timeoutMs: 10_000,
  ...over,
});
const registry = builtinRegistry();

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': 'session=abc' });
      res.end('x'.repeat(200_000));
    } else if (req.url === '/slow') {
      setTimeout(() => res.end('late'), 3000);
    } else if (req.url === '/fail') {
      res.writeHead(503);
      res.end('down');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, method: req.method }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('shell tool', () => {
  it('runs bash -c with cwd and env, and captures named outputs from $PLANGATE_OUTPUT', async () => {
    const out = await registry.call(
      'shell',
      {
        command: 'echo "$GREETING from $(pwd)"; echo "image=app:42" >> "$PLANGATE_OUTPUT"',
        cwd: '/tmp',
        env: { GREETING: 'hi' },
      },
      ctx(),
    );
    expect(out).toMatchObject({ exitCode: 0, stdout: 'hi from /tmp\n', outputs: { image: 'app:42' } });
  });

  it('fails with the exit code and the stderr tail', async () => {
    await expect(registry.call('shell', { command: 'echo broke >&2; exit 3' }, ctx())).rejects.toMatchObject({
      name: 'ToolFailed',
      exitCode: 3,
      message: expect.stringContaining('broke'),
    });
  });

  it('kills the whole process group on timeout (background children included)', async () => {
    const started = Date.now();
    const marker = `plangate-orphan-${process.pid}-${Date.now()}`;
    await expect(
      registry.call(
        'shell',
        { command: `sleep 30 & (exec -a ${marker} sleep 30) & wait`, timeoutSeconds: 1 },
        ctx(),
      ),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(5000);
    await new Promise((r) => setTimeout(r, 200));
    const left = await runProcess({ command: `pgrep -f '[${marker[0]}]${marker.slice(1)}' || true` });
    expect(left.stdout.trim()).toBe('');
  });

  it('caps captured output and marks the cut', async () => {
    const result = await runProcess({
      command: 'head -c 100000 /dev/zero | tr "\\0" a',
      maxOutputBytes: 1000,
    });
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stdout).toMatch(/^a{1000}\n…\[truncated 99000 bytes\]$/);
  });

  it('rejects args that do not fit the schema, located, before running anything', async () => {
    await expect(registry.call('shell', { command: 'true', bogus: 1 }, ctx())).rejects.toMatchObject({
      name: 'InvalidInput',
      location: 'steps.step1.args',
    });
    await expect(registry.call('shell', { command: '' }, ctx())).rejects.toMatchObject({
      location: 'steps.step1.args.command',
    });
    await expect(registry.call('shel', {}, ctx())).rejects.toThrow(/unknown tool "shel"/);
  });
});

describe('http tool', () => {
  it('returns status, kept headers and parsed JSON', async () => {
    const out = await registry.call('http', { method: 'POST', url: `${base}/x`, body: { a: 1 } }, ctx());
    expect(out).toMatchObject({ status: 200, json: { ok: true, method: 'POST' } });
  });

  it('limits the body and drops unlisted headers such as set-cookie', async () => {
    const out = (await registry.call('http', { method: 'GET', url: `${base}/big` }, ctx())) as {
      body: string;
      bodyTruncated: boolean;
      headers: Record<string, string>;
    };
    expect(out.bodyTruncated).toBe(true);
    expect(out.body).toContain('…[truncated');
    expect(out.headers['set-cookie']).toBeUndefined();
  });

  it('fails with the status for 5xx, and with TimeoutError when slow', async () => {
    await expect(registry.call('http', { method: 'GET', url: `${base}/fail` }, ctx())).rejects.toMatchObject({
      httpStatus: 503,
    });
    await expect(
      registry.call('http', { method: 'GET', url: `${base}/slow`, timeoutSeconds: 1 }, ctx()),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('connects to the canonical URL the policy judged, never to a spelling fetch reads otherwise', async () => {
    // One function's unit test: fetch is stubbed to see where the tool would connect.
    const seen: string[] = [];
    const stub = vi.spyOn(globalThis, 'fetch').mockImplementation(async (url) => {
      seen.push(String(url));
      return new Response('ok');
    });
    try {
      for (const url of [
        'https://Quarantine.Example.NET./x',
        'https:quarantine%2Eexample.net/x',
        'https://ｑuarantine。example.net/x',
      ])
        await registry.call('http', { method: 'GET', url }, ctx());
      for (const url of ['https://./x', 'https://quarantine.example.net../x'])
        await expect(registry.call('http', { method: 'GET', url }, ctx())).rejects.toMatchObject({
          name: 'InvalidInput',
        });
    } finally {
      stub.mockRestore();
    }
    expect(seen).toEqual(Array(3).fill('https://quarantine.example.net/x'));
  });

  it('surfaces the socket error code on a refused connection', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(
      registry.call('http', { method: 'GET', url: `http://127.0.0.1:${port}/` }, ctx()),
    ).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
  });
});

describe('agent, wait, echo', () => {
  it('runs the configured agent with the task on stdin and subscriptions in env', async () => {
    const out = await registry.call(
      'agent',
      { task: 'write the report', agent: 'coder' },
      ctx({
        env: {
          PLANGATE_AGENT_COMMAND: 'read -r t; echo "$PLANGATE_TARGET got: $t | $PLANGATE_SUBSCRIPTIONS"',
        },
        subscriptions: ['file:a.py', 'topic:x'],
      }),
    );
    expect(out).toMatchObject({
      exitCode: 0,
      response: 'coder got: write the report | file:a.py\ntopic:x\n',
    });
  });

  it("reports the usage the agent's last line states, which the runner counts against the budget", async () => {
    const run = (line: string) =>
      registry.call(
        'agent',
        { task: 't' },
        ctx({ env: { PLANGATE_AGENT_COMMAND: `echo done; echo '${line}'` } }),
      );
    expect(await run('{"usage":{"tokens":1200,"cost_usd":0.03}}')).toMatchObject({
      usage: { tokens: 1200, costUsd: 0.03 },
    });
    expect(await run('{"usage":{"input_tokens":10,"output_tokens":5},"total_cost_usd":0.5}')).toMatchObject({
      usage: { tokens: 15, costUsd: 0.5 },
    });
    expect(await run('no usage here')).not.toHaveProperty('usage');
  });

  it('says clearly when no agent is configured', async () => {
    await expect(registry.call('agent', { task: 't' }, ctx({ env: {} }))).rejects.toMatchObject({
      name: 'NotConfigured',
      message: expect.stringContaining('PLANGATE_AGENT_COMMAND'),
    });
  });

  it('waits and echoes', async () => {
    expect(await registry.call('wait', { seconds: 0 }, ctx())).toEqual({ waitedSeconds: 0 });
    expect(await registry.call('echo', { message: 'hi', value: { n: 1 } }, ctx())).toEqual({
      message: 'hi',
      value: { n: 1 },
    });
  });

  it('registers team tools by command', async () => {
    const teams = builtinRegistry();
    await teams.registerBindings({ 'team.upper': { command: 'tr a-z A-Z' } });
    expect(await teams.call('team.upper', { word: 'hi' }, ctx())).toEqual({ WORD: 'HI' });
    await expect(teams.registerBindings({ bad: { nope: 1 } })).rejects.toMatchObject({
      name: 'InvalidInput',
    });
  });
});
