/**
 * `plangate serve` as a user starts it: the URL first, the trusted-header identity only when asked
 * for (and only believed from loopback), a gate's link printed, SIGTERM ends it cleanly.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identityOf } from '../../lib/runtime/api/http.ts';
import { startServe } from './serve-process.ts';

const PLAN = {
  id: 'header-demo',
  version: 1,
  objective: 'Echo one value, proven by a contract',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'only',
      description: 'Echo the value one',
      tool: 'echo',
      args: { value: 'one' },
      contract: { kind: 'assert', expression: 'output.value = "one"' },
    },
  ],
};

describe('plangate serve', () => {
  it('believes x-plangate-user only with --identity header and only from loopback', () => {
    const event = (sourceIp: string) =>
      ({
        headers: { 'x-plangate-user': 'carol' },
        requestContext: { http: { method: 'POST', path: '/plans', sourceIp } },
      }) as unknown as Parameters<typeof identityOf>[0];
    const header = { mode: 'header', header: 'x-plangate-user' } as const;
    expect(identityOf(event('127.0.0.1'), header)).toBe('carol');
    expect(identityOf(event('::ffff:127.0.0.1'), header)).toBe('carol');
    expect(identityOf(event('203.0.113.7'), header)).toBeUndefined();
    expect(identityOf(event('127.0.0.1'), { mode: 'iam' })).toBeUndefined();
  });

  it('prints its URL first, launches a plan named by the header, prints the gate link, stops on SIGTERM', async () => {
    const store = await mkdtemp(join(tmpdir(), 'plangate-serve-cli-'));
    const serve = startServe(['--identity', 'header', '--store', store], store);
    const line = serve.line;
    try {
      const url = await line(() => true);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const refused = await fetch(`${url}/plans`, { method: 'POST', body: JSON.stringify(PLAN) });
      expect(refused.status).toBe(401);
      const submitted = await fetch(`${url}/plans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(PLAN),
      });
      expect(submitted.status, await submitted.clone().text()).toBe(201);
      const gate = await line((l) => l.startsWith('gate plan of header-demo v1 waits: '));
      expect(gate).toMatch(new RegExp(`waits: ${url}/approvals/[A-Za-z0-9._-]+$`));
      const events = (await (
        await fetch(
          `${url}/executions/${encodeURIComponent(((await submitted.json()) as { executionArn: string }).executionArn)}/events`,
          {
            headers: { 'x-plangate-user': 'carol' },
          },
        )
      ).json()) as { events: { event: string; details: Record<string, unknown> }[] };
      expect(events.events[0]).toMatchObject({ event: 'PLAN_CREATED', details: { submitted_by: 'carol' } });
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 60_000);
});
