import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MailSink } from '../../lib/aws-local/mail-sink.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';

const APPROVER = 'dana@example.com';

const notice = (n: number): ApprovalNotice => ({
  approvalId: `gate-${n}`,
  kind: 'plan',
  executionId: `arn:aws:states:us-east-1:123456789012:execution:demo:run-${n}`,
  plan: { id: `demo-${n}`, version: 1, digest: 'sha256:abc123' },
  round: 1,
  expiresAt: '2030-01-01T00:00:00.000Z',
  policy: { approvers: [APPROVER], forbiddenApprovers: [], quorum: 1 },
});

/** A message big enough that a write in place is seen half done by a reader polling the directory. */
const message = (n: number) => ({
  subject: `Approve demo-${n}`,
  text: `gate ${n}\n${'x'.repeat(64 * 1024)}`,
  html: `<p>gate ${n}</p>`,
  slackBlocks: [],
  link: `http://127.0.0.1/approvals/gate-${n}`,
});

describe('MailSink', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-mail-'));
  });
  afterEach(async () => {
    vi.useRealTimers();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes one whole file per notice when many gates open at once for one approver', async () => {
    // All in one millisecond, as when a burst of plans reaches its gates together.
    vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-12-02T10:00:00.000Z') });
    const sink = new MailSink(dir);
    // A reader (a mail client, a test) polling the directory while the burst is written.
    const partial: string[] = [];
    let sending = true;
    const reader = (async () => {
      while (sending) {
        for (const name of await readdir(dir).catch(() => [])) {
          if (!name.endsWith('.eml')) continue;
          const raw = await readFile(join(dir, name), 'utf8').catch(() => undefined);
          if (raw !== undefined && !/--plangate-[0-9a-f-]+--\r\n$/.test(raw)) partial.push(name);
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
    const sent = await Promise.all(
      Array.from({ length: 200 }, (_, n) => sink.send(notice(n), () => message(n))),
    ).finally(() => {
      sending = false;
    });
    await reader;

    const files = sent.flat();
    expect(new Set(files).size).toBe(200);
    const names = (await readdir(dir)).filter((f) => f.endsWith('.eml'));
    expect(names).toHaveLength(200);
    expect(await readdir(dir)).toHaveLength(200); // no temporary file left behind
    const gates = new Set<string>();
    for (const file of files) {
      expect(file.endsWith(`-${APPROVER}.eml`)).toBe(true);
      const raw = await readFile(file, 'utf8');
      expect(raw).toMatch(/--plangate-[0-9a-f-]+--\r\n$/);
      const text =
        /Content-Type: text\/plain; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+?)\r\n--/.exec(
          raw,
        )?.[1];
      gates.add(
        Buffer.from(String(text).replace(/\r\n/g, ''), 'base64').toString('utf8').split('\n')[0] as string,
      );
    }
    expect(gates.size).toBe(200);
    expect(partial).toEqual([]);
  });
});
