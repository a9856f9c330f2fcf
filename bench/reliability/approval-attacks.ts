/**
 * Attacks on a waiting gate through the real HTTP edge (`plangate serve`'s platform: the local API
 * Gateway with its JWT authorizer, the approvals Lambda handler, dynalite, the engine): forged,
 * tampered and expired links, wrong and forbidden approvers, bad tokens, other plan digests,
 * tampered step ids, malformed and oversized bodies, cross-site posts, replays. Every one must be
 * refused with a reason, and leave the gate as it was: still pending, nothing in the journal but
 * the refusals it audits. Then one gate is answered by many at once: exactly one decides.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { LocalIssuer, signJwt } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import { LinkSigner, parseLinkId } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';
import { FakeSlack } from '../../tests/fake-slack.ts';
import { echoChainPlan } from '../../tests/support/echo-plan.ts';

export const SUBMITTER = {
  accessKeyId: 'AKIDRELIABILITY',
  secretAccessKey: 'reliability-secret-0123456789',
  arn: 'arn:aws:iam::123456789012:user/submitter',
};
export const APPROVERS = Array.from({ length: 50 }, (_, i) => `approver-${i}@example.test`);
const FORBIDDEN = 'mallory@example.test';
const SLACK_BOT_TOKEN = `xoxb-reliability-${'t'.repeat(24)}`;
const SLACK_SIGNING_SECRET = `reliability-signing-${'s'.repeat(16)}`;
export const slackUser = (i: number) => `U0APPROVER${i}`;

export interface AttackResult {
  readonly attacks: number;
  readonly accepted: number;
  readonly refusedWithoutReason: number;
  readonly byCategory: Record<
    string,
    { attempts: number; statuses: Record<string, number>; sampleReason: string }
  >;
  readonly gateStillPending: boolean;
  readonly journalAfterAttacks: Record<string, number>;
}

export interface ConcurrencyResult {
  readonly answers: number;
  /** How many answers came through the API (JWT), the page (emailed links) and Slack. */
  readonly byChannel: Record<string, number>;
  /** After the race, the gate's Slack message shows the decision and has no buttons left. */
  readonly slackShowsDecision: boolean;
  readonly decided: number;
  readonly toldWhoDecided: number;
  readonly otherOutcomes: Record<string, number>;
  readonly decisionEvents: number;
}

function planWith(id: string, timeoutSeconds: number) {
  return echoChainPlan(id, ['build', 'ship'], {
    approval: {
      // The submitter is named too: only the no-self-approval rule stands between them and approving.
      approvers: [...APPROVERS, SUBMITTER.arn],
      forbiddenApprovers: [FORBIDDEN],
      allowAutoApprove: false,
      timeoutSeconds,
    },
  });
}

export interface Platform {
  platform: LocalPlatform;
  /** A local server speaking Slack's Web API; it sends signed clicks as Slack does. */
  slack: FakeSlack;
  issuer: LocalIssuer;
  signer: LinkSigner;
  gates: ApprovalNotice[];
  dir: string;
}

export async function startPlatform(): Promise<Platform> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-reliability-'));
  const issuer = new LocalIssuer();
  const gates: ApprovalNotice[] = [];
  const paths = storePaths(join(dir, 'store'));
  const slack = await FakeSlack.start({ botToken: SLACK_BOT_TOKEN, signingSecret: SLACK_SIGNING_SECRET });
  const platform = await LocalPlatform.start({
    paths,
    cwd: dir,
    env: {
      PLANGATE_SLACK_BOT_TOKEN: SLACK_BOT_TOKEN,
      PLANGATE_SLACK_SIGNING_SECRET: SLACK_SIGNING_SECRET,
      PLANGATE_SLACK_CHANNEL: 'C0RELIABILITY',
      PLANGATE_SLACK_API_URL: slack.apiUrl,
      PLANGATE_SLACK_APPROVERS: APPROVERS.map((email, i) => `${slackUser(i)}=${email}`).join(','),
    },
    identity: {
      mode: 'aws',
      principals: [SUBMITTER],
      jwt: { issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks },
    },
    onGate: (notice) => gates.push(notice),
  });
  return { platform, slack, issuer, signer: new LinkSigner(await loadSigningKey(paths)), gates, dir };
}

async function submitAndWait(p: Platform, plan: ReturnType<typeof planWith>): Promise<ApprovalNotice> {
  const response = await signedFetch(`${p.platform.url}/plans`, SUBMITTER, {
    method: 'POST',
    body: JSON.stringify(plan),
    headers: { 'content-type': 'application/json' },
  });
  if (response.status !== 201) throw new Error(`submit: ${response.status} ${await response.text()}`);
  for (let i = 0; i < 400; i++) {
    const gate = p.gates.find((g) => g.plan.id === plan.id);
    if (gate) return gate;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no gate for ${plan.id}`);
}

interface Attack {
  readonly category: string;
  readonly path: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

export const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

export async function runApprovalAttacks(
  seed: number,
): Promise<{ attacks: AttackResult; concurrency: ConcurrencyResult }> {
  const p = await startPlatform();
  try {
    const gate = await submitAndWait(p, planWith('attacked', 3600));
    const link = gate.approvalId;
    const parsed = parseLinkId(link);
    const digest = gate.plan.digest;
    const approve = JSON.stringify({ digest, decision: 'APPROVE' });
    const asApprover = (email: string) => ({
      ...JSON_HEADERS,
      authorization: `Bearer ${p.issuer.token(email)}`,
    });
    const page = (id: string) => `/approvals/${encodeURIComponent(id)}`;
    const rng = fc.sample(
      fc.string({
        minLength: 43,
        maxLength: 43,
        unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
      }),
      { numRuns: 200, seed },
    );
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const kid = p.issuer.jwks.keys[0]?.kid as string;
    const now = Math.floor(Date.now() / 1000);
    const attacks: Attack[] = [];
    const add = (category: string, path: string, body: string, headers: Record<string, string>) =>
      attacks.push({ category, path, body, headers });

    for (const mac of rng.slice(0, 150))
      add(
        'forged signature',
        page(`${parsed.approvalId}.${parsed.expiresAtEpoch}.${mac}`),
        approve,
        asApprover(APPROVERS[0] as string),
      );
    for (const mac of rng.slice(150, 200))
      add(
        'forged signature, as recipient',
        `${page(`${parsed.approvalId}.${parsed.expiresAtEpoch}.${Buffer.from(APPROVERS[1] as string).toString('base64url')}.${mac}`)}/as-recipient`,
        approve,
        JSON_HEADERS,
      );
    for (let i = 0; i < 100; i++) {
      const id = parsed.approvalId.split('');
      id[i % id.length] = id[i % id.length] === 'A' ? 'B' : 'A';
      add(
        'tampered approval id',
        page(`${id.join('')}.${parsed.expiresAtEpoch}.${link.split('.')[2]}`),
        approve,
        asApprover(APPROVERS[0] as string),
      );
    }
    for (let i = 1; i <= 50; i++)
      add(
        'tampered expiry',
        page(`${parsed.approvalId}.${parsed.expiresAtEpoch + i * 3600}.${link.split('.')[2]}`),
        approve,
        asApprover(APPROVERS[0] as string),
      );
    const bound = p.signer.bound(parsed.approvalId, parsed.expiresAtEpoch, digest, APPROVERS[2] as string);
    for (let i = 0; i < 50; i++) {
      const parts = bound.split('.');
      parts[2] = Buffer.from(`intruder-${i}@example.test`).toString('base64url');
      add(
        'recipient swapped in a bound link',
        `${page(parts.join('.'))}/as-recipient`,
        approve,
        JSON_HEADERS,
      );
    }
    for (let i = 0; i < 100; i++)
      add('wrong approver', page(link), approve, asApprover(`outsider-${i}@example.test`));
    for (let i = 0; i < 50; i++) add('forbidden approver', page(link), approve, asApprover(FORBIDDEN));
    for (let i = 0; i < 50; i++)
      add('self-approval: the submitter, signed in', page(link), approve, asApprover(SUBMITTER.arn));
    const badTokens = [
      { name: 'no token', headers: JSON_HEADERS },
      {
        name: 'token signed by another key',
        headers: {
          ...JSON_HEADERS,
          authorization: `Bearer ${signJwt(stranger.privateKey, kid, { iss: p.issuer.issuer, aud: p.issuer.audience, email: APPROVERS[0], exp: now + 600 })}`,
        },
      },
      {
        name: 'expired token',
        headers: {
          ...JSON_HEADERS,
          authorization: `Bearer ${p.issuer.token(APPROVERS[0] as string, { exp: now - 10 })}`,
        },
      },
      {
        name: 'token for another audience',
        headers: {
          ...JSON_HEADERS,
          authorization: `Bearer ${p.issuer.token(APPROVERS[0] as string, { aud: 'someone-else' })}`,
        },
      },
      {
        name: 'token from another issuer',
        headers: {
          ...JSON_HEADERS,
          authorization: `Bearer ${p.issuer.token(APPROVERS[0] as string, { iss: 'https://evil.example' })}`,
        },
      },
      {
        name: 'unsigned token (alg none)',
        headers: {
          ...JSON_HEADERS,
          authorization: `Bearer ${Buffer.from('{"alg":"none","kid":"x"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: p.issuer.issuer, aud: p.issuer.audience, email: APPROVERS[0], exp: now + 600 })).toString('base64url')}.`,
        },
      },
    ];
    for (let i = 0; i < 150; i++) {
      const bad = badTokens[i % badTokens.length] as (typeof badTokens)[number];
      add(`bad token: ${bad.name}`, page(link), approve, bad.headers);
    }
    for (let i = 0; i < 100; i++)
      add(
        'decision for another plan digest',
        page(link),
        JSON.stringify({ digest: `sha256:${i.toString(16).padStart(64, '0')}`, decision: 'APPROVE' }),
        asApprover(APPROVERS[0] as string),
      );
    for (let i = 0; i < 50; i++)
      add(
        'tampered step id',
        page(link),
        JSON.stringify({ digest, decision: 'APPROVE_WITH_MODIFICATIONS', skipSteps: [`ship${i}`] }),
        asApprover(APPROVERS[0] as string),
      );
    const junk = fc.sample(
      fc.oneof(
        fc.string({ maxLength: 300, unit: 'binary' }),
        fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
        fc.constant('{"digest": 1}'),
        fc.constant(`{"digest":"${digest}","decision":"MAYBE"}`),
        fc.constant(`{"digest":"${digest}","decision":"REJECT"}`),
        fc.constant(`{"digest":"${digest}","__proto__":{"decision":"APPROVE"}}`),
      ),
      { numRuns: 150, seed: seed + 1 },
    );
    for (const body of junk) add('malformed body', page(link), body, asApprover(APPROVERS[0] as string));
    for (let i = 0; i < 5; i++)
      add(
        'oversized body',
        page(link),
        `{"digest":"${digest}","decision":"APPROVE","comment":"${'x'.repeat(9 * 1024 * 1024)}"}`,
        asApprover(APPROVERS[0] as string),
      );
    for (let i = 0; i < 50; i++)
      add(
        'cross-site form post without credentials',
        page(link),
        `digest=${encodeURIComponent(digest)}&decision=APPROVE`,
        {
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'https://evil.example',
          referer: 'https://evil.example/',
        },
      );

    // A genuine page session (an emailed link opened in a browser), then posts missing a part of it.
    const session = await openPage(
      p,
      p.signer.bound(parsed.approvalId, parsed.expiresAtEpoch, digest, APPROVERS[3] as string),
    );
    const formPost = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const approveForm = (formToken?: string) =>
      new URLSearchParams({
        digest,
        decision: 'APPROVE',
        ...(formToken ? { form_token: formToken } : {}),
      }).toString();
    for (let i = 0; i < 50; i++) {
      add('page session post without its form token (CSRF)', session.answerPath, approveForm(), {
        ...formPost,
        cookie: session.cookie,
      });
      add(
        'page session post with a wrong form token',
        session.answerPath,
        approveForm(`${rng[i]?.slice(0, 32)}`),
        { ...formPost, cookie: session.cookie },
      );
      add(
        'cross-site post to a page session: form token, no cookie (SameSite=Strict)',
        session.answerPath,
        approveForm(session.formToken),
        { ...formPost, origin: 'https://evil.example' },
      );
      add('forged page session cookie', session.answerPath, approveForm(session.formToken), {
        ...formPost,
        cookie: `plangate_page=${rng[50 + i]}${rng[100 + i]}${rng[150 + i]}`,
      });
      add(
        'page session cookie moved to another page',
        `/approvals/${(rng[i] as string).slice(0, 22)}/as-recipient`,
        approveForm(session.formToken),
        { ...formPost, cookie: session.cookie },
      );
    }

    const byCategory: AttackResult['byCategory'] = {};
    let accepted = 0;
    let withoutReason = 0;
    const post = async (category: string, path: string, headers: Record<string, string>, body: string) => {
      const response = await fetch(`${p.platform.url}${path}`, { method: 'POST', headers, body });
      const reason = reasonOf(await response.text());
      const entry = byCategory[category] ?? { attempts: 0, statuses: {}, sampleReason: reason.slice(0, 160) };
      byCategory[category] = entry;
      entry.attempts++;
      entry.statuses[response.status] = (entry.statuses[response.status] ?? 0) + 1;
      if (response.status < 400) accepted++;
      else if (!reason.trim()) withoutReason++;
    };
    for (const attack of attacks) await post(attack.category, attack.path, attack.headers, attack.body);
    const view = (await (
      await fetch(`${p.platform.url}${page(link)}`, { headers: { accept: 'application/json' } })
    ).json()) as { status?: string };
    const events = await readEvents(
      p.platform.stack.data.clients.doc,
      p.platform.stack.data.tableNames.events,
      gate.executionId,
    );
    const journal: Record<string, number> = {};
    for (const e of events) journal[e.event] = (journal[e.event] ?? 0) + 1;

    // Replays and an expired link, after a genuine decision on the attacked gate.
    const decided = await fetch(`${p.platform.url}${page(link)}`, {
      method: 'POST',
      headers: asApprover(APPROVERS[0] as string),
      body: approve,
    });
    if (decided.status !== 200) throw new Error(`the genuine answer was refused: ${await decided.text()}`);
    for (let i = 0; i < 100; i++)
      await post('replayed after the decision', page(link), asApprover(APPROVERS[i % 10] as string), approve);
    const short = await submitAndWait(p, planWith('expiring', 1));
    await new Promise((r) => setTimeout(r, 2_200));
    const lateAnswer = JSON.stringify({ digest: short.plan.digest, decision: 'APPROVE' });
    for (let i = 0; i < 50; i++)
      await post('expired link', page(short.approvalId), asApprover(APPROVERS[0] as string), lateAnswer);

    const concurrency = await concurrentDecisions(p);
    return {
      attacks: {
        attacks: Object.values(byCategory).reduce((n, c) => n + c.attempts, 0),
        accepted,
        refusedWithoutReason: withoutReason,
        byCategory,
        gateStillPending: view.status === 'pending',
        journalAfterAttacks: journal,
      },
      concurrency,
    };
  } finally {
    await p.platform.close();
    await p.slack.close();
    await rm(p.dir, { recursive: true, force: true });
  }
}

/** The page's form posted as the browser sends it: its session cookie and form token with the answer. */
function pagePost(
  p: Platform,
  page: Awaited<ReturnType<typeof openPage>>,
  digest: string,
): Promise<Response> {
  return fetch(`${p.platform.url}${page.answerPath}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      cookie: page.cookie,
    },
    body: new URLSearchParams({ digest, decision: 'APPROVE', form_token: page.formToken }).toString(),
  });
}

/**
 * Opens a link as a browser does: its redirect to the page's handle and the session cookie, then
 * the page and its form token; returns where the page's form posts.
 */
export async function openPage(
  p: Platform,
  linkId: string,
): Promise<{ answerPath: string; cookie: string; formToken: string }> {
  const opened = await fetch(`${p.platform.url}/approvals/${encodeURIComponent(linkId)}`, {
    redirect: 'manual',
  });
  const location = opened.headers.get('location');
  const cookie = opened.headers.getSetCookie()[0]?.split(';')[0];
  if (opened.status !== 303 || !location || !cookie)
    throw new Error(`opening a link: ${opened.status} ${await opened.text()}`);
  const page = await (await fetch(`${p.platform.url}${location}`, { headers: { cookie } })).text();
  const formToken = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
  const action = /<form [^>]*action="([^"]+)"/.exec(page)?.[1];
  if (!formToken || !action) throw new Error('the page has no form token');
  return { answerPath: action, cookie, formToken };
}

/** The refusal's reason as the API gives it (`message`, else `error`), or the body's start. */
export function reasonOf(text: string): string {
  try {
    const json = JSON.parse(text) as { message?: string; error?: string };
    return json.message ?? json.error ?? '';
  } catch {
    return text.slice(0, 200);
  }
}

/**
 * 50 approvers answer one gate at once: a third through the API with a JWT, a third through their
 * emailed (recipient-bound) links as the page posts them, a third by clicking Approve in Slack.
 */
async function concurrentDecisions(p: Platform): Promise<ConcurrencyResult> {
  const gate = await submitAndWait(p, planWith('contested', 3600));
  const parsed = parseLinkId(gate.approvalId);
  const message = await p.slack.until("the gate's Slack message", () =>
    p.slack.messages.find((m) => p.slack.linkIdOf(m) === gate.approvalId),
  );
  const body = JSON.stringify({ digest: gate.plan.digest, decision: 'APPROVE' });
  // The page's approvers opened their emailed links first; they all click at once below.
  const pages = new Map(
    await Promise.all(
      APPROVERS.filter((_, i) => i % 3 === 1).map(
        async (email) =>
          [
            email,
            await openPage(
              p,
              p.signer.bound(parsed.approvalId, parsed.expiresAtEpoch, gate.plan.digest, email),
            ),
          ] as const,
      ),
    ),
  );
  const interactions = `${p.platform.url}/slack/interactions`;
  type Outcome = { channel: 'api' | 'page' | 'slack'; status: number; message: string; decided: boolean };
  const answers = APPROVERS.map(async (email, i): Promise<Outcome> => {
    if (i % 3 === 2) {
      const status = await p.slack.click(interactions, message, 'plangate.APPROVE', slackUser(i));
      // Slack shows a click's outcome in Slack: an ephemeral note to the clicker when refused.
      const told = p.slack.ephemerals.filter((e) => e.user === slackUser(i)).at(-1)?.text ?? '';
      return { channel: 'slack', status, message: told, decided: told === '' };
    }
    const response =
      i % 3 === 0
        ? await fetch(`${p.platform.url}/approvals/${encodeURIComponent(gate.approvalId)}`, {
            method: 'POST',
            headers: { ...JSON_HEADERS, authorization: `Bearer ${p.issuer.token(email)}` },
            body,
          })
        : await pagePost(p, pages.get(email) as Awaited<ReturnType<typeof openPage>>, gate.plan.digest);
    const json = (await response.json()) as { status?: string; message?: string };
    return {
      channel: i % 3 === 0 ? 'api' : 'page',
      status: response.status,
      message: json.message ?? json.status ?? '',
      decided: response.status === 200 && json.status === 'decided',
    };
  });
  const outcomes = await Promise.all(answers);
  let decided = 0;
  let told = 0;
  const other: Record<string, number> = {};
  const byChannel: Record<string, number> = {};
  for (const outcome of outcomes) {
    byChannel[outcome.channel] = (byChannel[outcome.channel] ?? 0) + 1;
    if (outcome.decided) decided++;
    else if (
      /already answered: APPROVE by \S+ at \d{4}-|already decided\. :white_check_mark: \*APPROVE\* by \S+ at/.test(
        outcome.message,
      )
    )
      told++;
    else {
      const key = `${outcome.channel} ${outcome.status} ${outcome.message}`;
      other[key] = (other[key] ?? 0) + 1;
    }
  }
  // Decided anywhere, the Slack message shows it and offers no buttons.
  const slackShowsDecision = p.slack.buttons(message).length === 0;
  const events = await readEvents(
    p.platform.stack.data.clients.doc,
    p.platform.stack.data.tableNames.events,
    gate.executionId,
  );
  return {
    answers: outcomes.length,
    byChannel,
    slackShowsDecision,
    decided,
    toldWhoDecided: told,
    otherOutcomes: other,
    decisionEvents: events.filter((e) => e.event === 'GATE_APPROVED' || e.event === 'GATE_REJECTED').length,
  };
}
