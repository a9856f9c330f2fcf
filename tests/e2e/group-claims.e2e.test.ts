/**
 * Groups are read as lists (docs/policy.md, "Groups, from where they live"): through `plangate
 * serve` with a JWT authorizer, an approver whose verified token lists the group `former sre` or
 * `ops,sre` is not in `sre`, however API Gateway flattens the claim; one that lists `sre` is.
 */
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { type SigningCredentials, signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import { workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

const issuer = new LocalIssuer({ issuer: 'https://issuer.example.test', audience: 'approvers-app' });
let serve: ServeProcess;
let url: string;
let submitter: SigningCredentials;

beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-group-claims-'));
  const policies = join(store, 'policies');
  await writeFile(join(store, 'jwks.json'), JSON.stringify(issuer.jwks));
  await mkdir(policies);
  await writeFile(
    join(policies, 'org.cedar'),
    [
      '@id("baseline-permit")',
      'permit (principal, action, resource);',
      '@id("one-sre-completes")',
      'forbid (principal, action == Action::"CompleteGate", resource)',
      'unless { resource.hasTag("sre") && resource.getTag("sre") >= 1 };',
    ].join('\n'),
  );
  serve = startServe(
    [
      ...['--store', store, '--time-scale', '0.01', '--policy', policies],
      ...['--jwt-issuer', issuer.issuer, '--jwt-audience', issuer.audience],
      ...['--jwks', join(store, 'jwks.json')],
    ],
    await workDir(),
  );
  url = await serve.line(() => true);
  [submitter] = JSON.parse(await readFile(join(store, 'credentials.json'), 'utf8')) as [SigningCredentials];
}, 60_000);
afterAll(async () => {
  await serve?.stop();
});

async function answer(linkId: string, email: string, groups: unknown) {
  const link = `${url}/approvals/${encodeURIComponent(linkId)}`;
  const gate = (await (await fetch(link, { headers: { accept: 'application/json' } })).json()) as {
    planDigest: string;
  };
  const res = await fetch(link, {
    method: 'POST',
    headers: {
      accept: 'application/json',
      'content-type': 'application/json',
      authorization: `Bearer ${issuer.token(email, { 'cognito:groups': groups })}`,
    },
    body: JSON.stringify({ digest: gate.planDigest, decision: 'APPROVE' }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('group claims, through plangate serve', { timeout: 90_000 }, () => {
  it('a group named "former sre" or "ops,sre" is not sre; a list naming sre is', async () => {
    const plan = {
      id: 'group-claims',
      version: 1,
      objective: 'Echo one value once an sre approved',
      sizePolicy: { minSteps: 1 },
      approval: { allowAutoApprove: false },
      steps: [
        {
          id: 'say',
          description: 'Echo hello',
          tool: 'echo',
          args: { message: 'hello' },
          contract: { kind: 'assert', expression: 'output.message = "hello"' },
        },
      ],
    };
    const res = await signedFetch(new URL('/plans', url), submitter, {
      method: 'POST',
      body: JSON.stringify(plan),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const line = await serve.line((l) => l.startsWith('gate plan of group-claims v1 waits: '));
    const linkId = decodeURIComponent(line.split('/approvals/')[1] as string);
    expect(await answer(linkId, 'fran@example.com', ['former sre'])).toMatchObject({
      status: 200,
      body: { status: 'pending' },
    });
    expect(await answer(linkId, 'olaf@example.com', ['ops,sre', 'ops'])).toMatchObject({
      status: 200,
      body: { status: 'pending' },
    });
    // A string claim is one group, whatever it holds.
    expect(await answer(linkId, 'stan@example.com', 'ops sre')).toMatchObject({
      status: 200,
      body: { status: 'pending' },
    });
    expect(await answer(linkId, 'sam@example.com', ['ops', 'sre'])).toMatchObject({
      status: 200,
      body: { status: 'decided' },
    });
  });
});
