/**
 * People are who they verifiably are (issue 32), through `plangate serve`'s platform with the AWS
 * deployment's authorizers (SigV4 to submit, an approver's JWT to answer):
 * - one signed-in account (one `sub`) is one approver, whichever email its token names: two votes
 *   from one subject, as alice@ and then bob@, do not make a quorum of 2;
 * - an email the issuer has not verified names nobody: a plan that names alice@ as its approver is
 *   not approved by a token claiming alice@ with `email_verified: false`;
 * - an IAM principal the policy's people file names is that person: carol submits through SigV4
 *   and may not approve her own plan with her JWT (nor as her Identity Center session's name).
 * Each refusal is journaled (GATE_ANSWER_REFUSED); carol is refused on the signed-in approval page too.
 */
import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { defaultPolicyDir, PolicySet } from '../../lib/policy/policy-set.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const CAROL = {
  accessKeyId: 'AKIDCAROLIDENTITY',
  secretAccessKey: 'carol-identity-secret-0123',
  arn: 'arn:aws:iam::123456789012:user/carol',
};
/** Carol again, signed in through IAM Identity Center: its session is named by her user name. */
const CAROL_SSO = {
  accessKeyId: 'AKIDCAROLSSOSESSION',
  secretAccessKey: 'carol-sso-secret-0123',
  arn: 'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Deployers_0a1b2c3d4e5f6a7b/carol@example.test',
};
/** A deploy role nobody mapped to a person. */
const ROBOT = {
  accessKeyId: 'AKIDROBOTIDENTITY',
  secretAccessKey: 'robot-identity-secret-0123',
  arn: 'arn:aws:iam::123456789012:user/ci-robot',
};
const issuer = new LocalIssuer();

let platform: LocalPlatform;
let api: ApiClient;
const gates: ApprovalNotice[] = [];
/** Each gate's shared link, as the notifier hands it on. */
const links = new Map<string, string>();

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-identities-'));
  const policies = join(dir, 'policies');
  await cp(defaultPolicyDir(), policies, { recursive: true });
  await writeFile(
    join(policies, 'people.json'),
    JSON.stringify({ 'Carol@Example.test': [CAROL.arn, CAROL_SSO.arn] }),
  );
  platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    identity: {
      mode: 'aws',
      principals: [CAROL, CAROL_SSO, ROBOT],
      jwt: { issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks },
    },
    policy: await PolicySet.load(policies),
    onGate: (notice, link) => {
      links.set(notice.approvalId, link);
      gates.push(notice);
    },
  });
  api = new ApiClient(platform.url);
}, 60_000);

afterAll(async () => {
  await platform?.close();
});

async function submit(
  id: string,
  approval: Record<string, unknown>,
  as: typeof CAROL = ROBOT,
): Promise<{ executionArn: string; gate: ApprovalNotice; created: JournalRecord }> {
  const response = await api.request('POST', '/plans', {
    signWith: as,
    body: JSON.stringify(echoChainPlan(id, ['only'], { approval: { allowAutoApprove: false, ...approval } })),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status, response.text).toBe(201);
  const executionArn = response.json().executionArn as string;
  const gate = await waitFor(`the gate of ${id}`, () => gates.find((g) => g.plan.id === id));
  const [created] = await journal(executionArn);
  return { executionArn, gate, created: created as JournalRecord };
}

async function answer(
  gate: ApprovalNotice,
  token: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await api.request('POST', `/approvals/${encodeURIComponent(gate.approvalId)}`, {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ digest: gate.plan.digest, decision: 'APPROVE' }),
  });
  return { status: response.status, body: response.json() };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const journal = (executionArn: string): Promise<JournalRecord[]> =>
  readEvents(platform.stack.data.clients.doc, platform.stack.data.tableNames.events, executionArn);

const refusals = async (executionArn: string) =>
  (await journal(executionArn))
    .filter((e) => e.event === 'GATE_ANSWER_REFUSED')
    .map((e) => [e.details.reason, e.details.by]);

describe.concurrent('people are who they verifiably are (plangate serve, AWS authorizers)', {
  timeout: 90_000,
}, () => {
  it('one subject is one approver: two emails from one account do not make a quorum of 2', async () => {
    const { executionArn, gate } = await submit('one-subject', { quorum: 2 });
    const sub = 'f3b0c442-98fc-4c1c-9e6d-3a1d0c5b2a11';
    expect((await answer(gate, issuer.token('alice@example.test', { sub }))).body).toMatchObject({
      status: 'pending',
    });
    const again = await answer(gate, issuer.token('bob@example.test', { sub }));
    expect(again.status).toBe(409);
    expect(again.body.message).toContain(
      'bob@example.test has already approved this gate as alice@example.test (the same signed-in account)',
    );
    expect(await refusals(executionArn)).toEqual([['used', 'bob@example.test']]);
    // Another person completes it.
    expect((await answer(gate, issuer.token('dana@example.test'))).body).toMatchObject({ status: 'decided' });
    const events = await waitFor('the run', async () => {
      const all = await journal(executionArn);
      return all.some((e) => e.event === 'EXECUTION_COMPLETE') ? all : undefined;
    });
    expect(events.filter((e) => e.event === 'GATE_VOTE').map((e) => e.details.voter)).toEqual([
      'alice@example.test',
      'dana@example.test',
    ]);
  });

  it('an unverified email names nobody: the plan that names alice@ is not approved by a token claiming her', async () => {
    const { executionArn, gate } = await submit('unverified', { approvers: ['alice@example.test'] });
    const forged = await answer(
      gate,
      issuer.token('alice@example.test', { sub: '0d9e8c1a-unverified', email_verified: false }),
    );
    expect(forged.status).toBe(403);
    expect(forged.body.message).toContain("sub:0d9e8c1a-unverified is not one of this plan's approvers");
    // API Gateway hands claims on as text: "false" is as unverified as false.
    const asText = await answer(
      gate,
      issuer.token('alice@example.test', { sub: '0d9e8c1a-text', email_verified: 'false' }),
    );
    expect(asText.status).toBe(403);
    expect(await refusals(executionArn)).toEqual([
      ['forbidden', 'sub:0d9e8c1a-unverified'],
      ['forbidden', 'sub:0d9e8c1a-text'],
    ]);
    expect((await answer(gate, issuer.token('alice@example.test'))).body).toMatchObject({
      status: 'decided',
    });
  });

  it('an IAM submitter the people file names is that person: carol may not approve her own plan', async () => {
    for (const [id, principal] of [
      ['carol-iam', CAROL],
      ['carol-sso', CAROL_SSO],
    ] as const) {
      const { executionArn, gate, created } = await submit(id, {}, principal);
      expect(created.details).toMatchObject({
        submitted_by: 'carol@example.test',
        submitted_by_principal: principal.arn,
      });
      for (const email of ['carol@example.test', 'CAROL@example.test', 'carol@EXAMPLE.test.']) {
        const own = await answer(gate, issuer.token(email));
        expect(own.status, email).toBe(403);
        expect(own.body.message).toContain('carol@example.test submitted this plan and may not approve it');
      }
      // And on the approval page, signed in: the page's session, its form token, her ID token.
      const link = links.get(gate.approvalId) as string;
      const opened = await fetch(link, { redirect: 'manual' });
      expect(opened.status).toBe(303);
      const page = new URL(opened.headers.get('location') as string, link).href;
      const cookie = (opened.headers.get('set-cookie') as string).split(';')[0] as string;
      const html = await (await fetch(page, { headers: { cookie } })).text();
      const formToken = /name="form_token" value="([^"]+)"/.exec(html)?.[1] as string;
      const signedIn = await fetch(page, {
        method: 'POST',
        headers: {
          cookie,
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${issuer.token('carol@example.test')}`,
        },
        body: JSON.stringify({ digest: gate.plan.digest, decision: 'APPROVE', form_token: formToken }),
      });
      expect(signedIn.status).toBe(403);
      expect(((await signedIn.json()) as { message: string }).message).toContain(
        'carol@example.test submitted this plan and may not approve it',
      );
      expect((await refusals(executionArn)).map(([reason]) => reason)).toEqual([
        'forbidden',
        'forbidden',
        'forbidden',
        'forbidden',
      ]);
      expect((await answer(gate, issuer.token('dana@example.test'))).body).toMatchObject({
        status: 'decided',
      });
    }
  });

  it('an IAM principal nobody mapped stays the principal it is', async () => {
    const { created } = await submit('robot', {});
    expect(created.details.submitted_by).toBe(ROBOT.arn);
    expect(created.details.submitted_by_principal).toBeUndefined();
  });
});
