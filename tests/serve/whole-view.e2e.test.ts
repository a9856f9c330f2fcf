/**
 * A plan too large for the gate's own view, through `plangate serve`'s platform (Plans API →
 * compiled gate → approvals API): the approval page shows every command whole, page by page,
 * from the plan stored under the gate's digest, and the digest it posts is the digest of what it
 * showed; the approval is refused until every page was shown; a stored plan altered behind the
 * gate's back is refused (the page shows nothing of it, an approval of it is not taken).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { planDigest } from '../../lib/plan/digest.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { LinkSigner } from '../../lib/runtime/gate/links.ts';
import { notApprovableReason, shownOfNotice } from '../../lib/runtime/gate/shown-gate.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { escapeHtml } from '../../lib/runtime/shared/html.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';
import { type OpenedApprovalPage, openApprovalPage } from '../support/approval-session.ts';

const ALICE = {
  accessKeyId: 'AKIDALICEWHOLEVIEW',
  secretAccessKey: 'alice-whole-view-secret-01',
  arn: 'arn:aws:iam::123456789012:user/alice',
};
const APPROVER = 'dana@example.test';
const issuer = new LocalIssuer();

/** Three commands of 100 KB, 90 KB and a line: more than the gate's 160 KiB view holds. */
const COMMANDS = {
  first: `echo '${'a'.repeat(100 * 1024)}' > first.txt`,
  second: `printf '%s' '${'b<&>"'.repeat(18 * 1024)}' > second.txt`,
  third: 'cat first.txt second.txt > /dev/null',
} as const;

const PLAN = PlanSchema.parse({
  id: 'whole-view',
  version: 1,
  objective: 'Write two long files and read them',
  sizePolicy: { minSteps: 1 },
  approval: { approvers: [APPROVER], allowAutoApprove: false, timeoutSeconds: 3600 },
  steps: Object.entries(COMMANDS).map(([id, command], i, all) => ({
    id,
    description: `Run the ${id} command`,
    tool: 'shell',
    args: { command },
    contract: { kind: 'command', command: 'true' },
    dependsOn: i > 0 ? [all[i - 1]?.[0]] : [],
  })),
});

let platform: LocalPlatform;
let signer: LinkSigner;
let notice: ApprovalNotice;
const notices: ApprovalNotice[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-whole-view-'));
  const paths = storePaths(join(dir, 'store'));
  platform = await LocalPlatform.start({
    paths,
    cwd: dir,
    identity: {
      mode: 'aws',
      principals: [ALICE],
      jwt: { issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks },
    },
    onGate: (n) => notices.push(n),
  });
  signer = new LinkSigner(await loadSigningKey(paths));
  const response = await new ApiClient(platform.url).request('POST', '/plans', {
    signWith: ALICE,
    body: JSON.stringify(PLAN),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status).toBe(201);
  for (let i = 0; i < 800 && notices.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
  notice = notices[0] as ApprovalNotice;
  expect(notice).toBeDefined();
}, 60_000);

afterAll(async () => {
  await platform?.close();
});

const link = () =>
  `${platform.url}/approvals/${encodeURIComponent(signer.forRecipient(notice.approvalId, notice.plan.digest, APPROVER))}`;
const open = (): Promise<OpenedApprovalPage> => openApprovalPage(link());

/** The page a link opens, whatever its status: the redirect followed with the session's cookie. */
async function pageOf(): Promise<{ status: number; html: string }> {
  const opened = await fetch(link(), { redirect: 'manual' });
  const cookie = (opened.headers.get('set-cookie') as string).split(';')[0] as string;
  const page = await fetch(new URL(opened.headers.get('location') as string, link()), {
    headers: { cookie },
  });
  return { status: page.status, html: await page.text() };
}

let fullySeen: string;

describe('the approval page of a plan too large for its gate', { timeout: 60_000 }, () => {
  it('shows every command whole across its pages, bound to the digest it posts', async () => {
    // The premise: what email, Slack and the terminal render hides a command, so they cannot approve.
    expect(notApprovableReason(shownOfNotice(notice))).toMatch(/does not show the commands of/);
    const page = await open();
    const { pages, seen } = await page.readEveryPage();
    expect(pages.length).toBeGreaterThan(1);
    // The digest posted back is the gate's, and the digest of the plan whose commands were shown.
    for (const html of pages)
      expect(/name="digest" value="([^"]+)"/.exec(html)?.[1]).toBe(`sha256:${planDigest(PLAN)}`);
    expect(notice.plan.digest).toBe(`sha256:${planDigest(PLAN)}`);
    for (const [id, command] of Object.entries(COMMANDS)) {
      const on = pages.filter((html) => html.includes(`id="step-${id}"`));
      expect(on, id).toHaveLength(1);
      expect(on[0]?.includes(`<pre><code>${escapeHtml(command)}</code></pre>`), id).toBe(true);
    }
    // Approve only where every page was shown.
    expect(pages.slice(0, -1).every((html) => !html.includes('value="APPROVE"'))).toBe(true);
    expect(pages[0]?.includes('Approve is offered once you have seen every page')).toBe(true);
    expect(pages.at(-1)?.includes('value="APPROVE"')).toBe(true);
    fullySeen = seen;
  });

  it('refuses an approval before every page was shown, or with a forged list', async () => {
    const page = await open();
    const onlyFirst = /name="seen" value="([^"]*)"/.exec(page.html)?.[1] as string;
    // Without a list it is told where to approve; with one that falls short, which pages are left.
    const refusals: [string, RegExp][] = [
      [onlyFirst, /has not shown you every page of the plan/],
      ['', /cannot be approved here: its view does not show/],
      [
        fullySeen.replace(/\.(.)/, (_, c) => `.${c === 'A' ? 'B' : 'A'}`),
        /has not shown you every page of the plan/,
      ],
    ];
    for (const [seen, told] of refusals) {
      const response = await page.answer({ decision: 'APPROVE', digest: notice.plan.digest, seen });
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(told);
    }
  });

  it('refuses a stored plan altered behind the gate: not shown, not approvable; approved once restored', async () => {
    const doc = platform.stack.data.clients.doc;
    const TableName = platform.stack.data.tableNames.plans;
    // The part that holds the last command (the plan takes more than one).
    let stored: Record<string, unknown> | undefined;
    for (let n = 0; n < 5 && !stored; n++) {
      const key = { planDigest: `sha256:${planDigest(PLAN)}`, part: String(n).padStart(6, '0') };
      const item = (await doc.send(new GetCommand({ TableName, Key: key }))).Item;
      if (String(item?.text ?? '').includes('cat first.txt second.txt')) stored = item;
    }
    if (!stored) throw new Error('no stored part holds the last command');
    const text = String(stored.text);
    await doc.send(
      new PutCommand({
        TableName,
        Item: { ...stored, text: text.replace('cat first.txt second.txt > /dev/null', 'rm -rf ../x') },
      }),
    );
    const altered = await pageOf();
    expect(altered.status).toBe(409);
    expect(altered.html.includes('it was altered, so it is not shown')).toBe(true);
    expect(altered.html.includes('rm -rf ../x')).toBe(false);
    // An approval with a genuine list of every page is refused too, and nothing is decided.
    await doc.send(new PutCommand({ TableName, Item: stored }));
    const restored = await open();
    await doc.send(
      new PutCommand({
        TableName,
        Item: { ...stored, text: text.replace('cat first.txt second.txt > /dev/null', 'rm -rf ../x') },
      }),
    );
    const refused = await restored.answer({
      decision: 'APPROVE',
      digest: notice.plan.digest,
      seen: fullySeen,
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('it was altered');
    await doc.send(new PutCommand({ TableName, Item: stored }));
    const approved = await restored.answer({
      decision: 'APPROVE',
      digest: notice.plan.digest,
      seen: fullySeen,
    });
    expect(approved.status).toBe(200);
    const events = await readEvents(doc, platform.stack.data.tableNames.events, notice.executionId);
    expect(events.filter((e) => e.event === 'GATE_APPROVED')).toHaveLength(1);
  });
});
