/**
 * A step's `aws` and the platform's secrets in the validator: grants are IAM actions on ARNs; no
 * plan may name the platform's own secrets (plangate-platform/…), as a secret it declares or as a
 * resource its grants could reach, however the pattern is spelled; every refusal is located.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { awsAccessProblems, sessionPolicy } from '../../lib/plan/aws-access.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

const step = (aws: unknown) => ({
  id: 'sync',
  description: 'Sync the reports',
  tool: 'shell',
  args: { command: 'aws s3 sync s3://reports ./reports' },
  contract: { kind: 'command', command: 'test -d reports' },
  aws,
});
const planWith = (aws: unknown, secrets: unknown[] = []): Plan =>
  PlanSchema.parse({ id: 'reports', objective: 'Sync the reports', steps: [step(aws)], secrets });

/** The plan as a JSON file, parsed and validated: its problems as `line:col code message`. */
async function located(document: unknown): Promise<string[]> {
  const sized = { ...(document as object), sizePolicy: { minSteps: 1 } };
  const parsed = parsePlanText(JSON.stringify(sized, null, 2), { filename: 'plan.json' });
  if (!parsed.plan) return parsed.problems.map((p) => `${p.location.line}:${p.location.column} ${p.message}`);
  const result = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap, checkShell: false });
  return result.problems.map((p) => `${p.location.line}:${p.location.column} ${p.code} ${p.message}`);
}

describe("a step's aws", () => {
  it('is a session policy of Allow statements, exactly as declared', () => {
    const aws = {
      allow: [{ actions: ['s3:GetObject', 's3:ListBucket'], resources: ['arn:aws:s3:::reports/*'] }],
    };
    expect(JSON.parse(sessionPolicy(planWith(aws).steps[0]?.aws ?? { allow: [] }))).toEqual({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: ['s3:GetObject', 's3:ListBucket'], Resource: ['arn:aws:s3:::reports/*'] },
      ],
    });
    expect(awsAccessProblems(planWith(aws))).toEqual([]);
  });

  it('refuses what is not an IAM action or a resource, located, saying how to write it', async () => {
    const problems = await located({
      id: 'reports',
      objective: 'Sync the reports',
      steps: [step({ allow: [{ actions: ['GetObject'], resources: ['reports/*'] }] })],
    });
    expect(problems.join('\n')).toMatch(/^\d+:\d+ .*an IAM action is `service:Action`, e.g. s3:GetObject/m);
    expect(problems.join('\n')).toMatch(/^\d+:\d+ .*a resource is an ARN/m);
  });

  it.each([
    ['*', ['secretsmanager:GetSecretValue']],
    ['arn:aws:secretsmanager:*', ['secretsmanager:*']],
    ['arn:aws:secretsmanager:us-east-1:123456789012:secret:*', ['*']],
    ['arn:aws:secretsmanager:*:*:secret:plangate-platform/*', ['secretsmanager:GetSecretValue']],
    ['arn:*:*:*:*:*:plangate-p?atform/slack*', ['secrets*:Get*']],
    [
      'arn:aws:secretsmanager:eu-west-1:111122223333:secret:PLANGATE-PLATFORM/slack-signing-secret-*',
      ['*:GetSecretValue'],
    ],
  ])('refuses %s (%s): it covers the platform’s secrets', async (resource, actions) => {
    const problems = await located({
      id: 'reports',
      objective: 'Sync the reports',
      steps: [step({ allow: [{ actions, resources: ['arn:aws:s3:::reports/*', resource] }] })],
    });
    expect(problems).toEqual([
      expect.stringMatching(
        /^\d+:\d+ aws-access ".*" covers the platform's own secrets \(plangate-platform\/…\)/,
      ),
    ]);
  });

  it('leaves grants alone that cannot reach a secret, and plan secrets under plangate/plans/', () => {
    const aws = {
      allow: [
        { actions: ['s3:*'], resources: ['*'] },
        {
          actions: ['secretsmanager:GetSecretValue'],
          resources: ['arn:aws:secretsmanager:*:*:secret:plangate/plans/*'],
        },
      ],
    };
    expect(awsAccessProblems(planWith(aws))).toEqual([]);
  });

  it('refuses a session policy longer than STS takes', () => {
    const resources = Array.from({ length: 60 }, (_, i) => `arn:aws:s3:::reports-bucket-number-${i}/*`);
    expect(awsAccessProblems(planWith({ allow: [{ actions: ['s3:GetObject'], resources }] }))).toEqual([
      expect.objectContaining({ pointer: '/steps/0/aws', message: expect.stringMatching(/at most 2048/) }),
    ]);
  });

  it('finds the platform prefix in any secret name it starts, whatever follows (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9/_+=.@-]{0,30}$/), fc.boolean(), (rest, asArn) => {
        const name = `plangate-platform/${rest}`;
        const ref = asArn ? `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}` : name;
        expect(
          awsAccessProblems(planWith(undefined, [{ name: 'token', source: 'secretsmanager', ref }])),
        ).toEqual([expect.objectContaining({ pointer: '/secrets/0/ref' })]);
      }),
    );
  });
});

describe("a step's aws in Markdown", () => {
  it('is a field of the step, a fenced yaml block or inline, located where it is refused', async () => {
    const text = [
      '# Sync the reports',
      '',
      '## Steps',
      '',
      '### 1. Sync the reports',
      '**tool:** shell',
      '**args:** {command: "aws s3 sync s3://reports ./reports"}',
      '**aws:**',
      '```yaml',
      'allow:',
      '  - actions: [s3:GetObject]',
      '    resources: ["arn:aws:s3:::reports/*"]',
      '  - actions: ["secretsmanager:*"]',
      '    resources: ["arn:aws:secretsmanager:*:*:secret:*"]',
      '```',
      '**contract:** `test -d reports`',
      '',
    ].join('\n');
    const parsed = parsePlanText(text, { filename: 'plan.md' });
    expect(parsed.plan?.steps[0]?.aws?.allow[0]).toEqual({
      actions: ['s3:GetObject'],
      resources: ['arn:aws:s3:::reports/*'],
    });
    const result = await validatePlan(parsed.plan as Plan, {
      sourceMap: parsed.sourceMap,
      checkShell: false,
    });
    expect(
      result.problems
        .filter((p) => p.code === 'aws-access')
        .map((p) => `${p.location.line}:${p.location.column}`),
    ).toEqual(['14:17']);
  });
});

describe("the platform's secrets", () => {
  it('may not be a plan secret, located at its ref', async () => {
    const problems = await located({
      id: 'reports',
      objective: 'Sync the reports',
      steps: [step(undefined)],
      secrets: [{ name: 'slack', source: 'secretsmanager', ref: 'plangate-platform/slack-signing-secret' }],
    });
    expect(problems).toEqual([
      expect.stringMatching(
        /^\d+:\d+ aws-access secret "slack" \(plangate-platform\/slack-signing-secret\) is one of the platform's own secrets .* keep the plan's secrets under plangate\/plans\//,
      ),
    ]);
  });
});
