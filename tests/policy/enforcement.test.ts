/**
 * Enforcement levels (docs/policy.md#enforcement-levels): a forbid is hard-mandatory unless its
 * `@enforcement` says `advisory` (reported, never denies) or `soft-mandatory` (denies unless a
 * member of its `@overrideBy` group overrides it with a reason). Wrong annotations refuse the
 * directory, located.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { planEntity, planFacts } from '../../lib/policy/entities.ts';
import { PolicyLoadError, PolicySet } from '../../lib/policy/policy-set.ts';
import { parseApproval } from '../../lib/run/decisions.ts';

async function policyDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-enforcement-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const PERMIT = '@id("baseline-permit")\npermit (principal, action, resource);\n';
const plan = PlanSchema.parse({
  id: 'two-steps',
  objective: 'Fetch the report and keep it',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'fetch',
      description: 'Fetch the report',
      tool: 'http',
      args: { method: 'GET', url: 'https://reports.example.com/today' },
    },
    { id: 'keep', description: 'List it', tool: 'shell', args: { command: 'ls out' }, dependsOn: ['fetch'] },
  ],
});
const submission = (name: string) => ({
  principal: { name },
  action: 'SubmitPlan' as const,
  resource: planEntity({ id: plan.id, version: 1, digest: 'sha256:abc' }, planFacts(plan), 'carol'),
  context: { channel: 'api', solo: false },
});

const levels = {
  'rules.cedar': `${PERMIT}
@id("trial-no-http")
@enforcement("advisory")
forbid (principal, action == Action::"SubmitPlan", resource) when { resource.tools.contains("http") };

@id("big-plans-need-sre")
@enforcement("soft-mandatory")
@overrideBy("incident-commanders")
@reason("plans of more than one step are submitted by sre")
forbid (principal, action == Action::"SubmitPlan", resource) when { resource.stepCount > 1 }
unless { principal in Group::"sre" };
`,
  'groups.json': JSON.stringify({ sre: ['sam'], 'incident-commanders': ['Ivy@Example.com'] }),
};

describe('enforcement levels', () => {
  it('an advisory forbid that matches is reported and never denies', async () => {
    const policy = await PolicySet.load(await policyDir(levels));
    const decided = policy.authorize(submission('sam'));
    expect(decided).toMatchObject({ decision: 'allow', advisory: ['trial-no-http'] });
    expect(decided.level).toBeUndefined();
    expect(policy.levelOf('trial-no-http')).toBe('advisory');
  });

  it('a soft-mandatory forbid denies, names who may override, and gives way to a member with a reason', async () => {
    const policy = await PolicySet.load(await policyDir(levels));
    const decided = policy.authorize(submission('dora'));
    expect(decided).toMatchObject({
      decision: 'deny',
      level: 'soft-mandatory',
      determiningPolicies: ['big-plans-need-sre'],
      overridable: { policies: ['big-plans-need-sre'], by: ['incident-commanders'] },
      advisory: ['trial-no-http'],
    });
    // A member in any spelling of their name, with a reason: allowed, on the record.
    expect(policy.override(decided, { name: 'IVY@example.COM' }, ' incident 4711 ')).toMatchObject({
      decision: 'allow',
      overridden: { by: 'ivy@example.com', reason: 'incident 4711', policies: ['big-plans-need-sre'] },
    });
    // A group the request proves counts as the groups file's do.
    expect(policy.override(decided, { name: 'zed', groups: ['incident-commanders'] }, 'paged')).toMatchObject(
      {
        decision: 'allow',
      },
    );
    expect(policy.override(decided, { name: 'dora' }, 'I really need it')).toBe(
      'dora may not override big-plans-need-sre: members of incident-commanders may',
    );
    expect(policy.override(decided, { name: 'ivy@example.com' }, '   ')).toMatch(/needs a reason/);
    expect(policy.override(decided, { name: 'ivy@example.com' }, 'ok\u202e')).toMatch(/one line/);
  });

  it('a hard-mandatory forbid is not overridden, even with a soft one beside it', async () => {
    const policy = await PolicySet.load(
      await policyDir({
        ...levels,
        'hard.cedar':
          '@id("no-http-ever")\nforbid (principal, action == Action::"SubmitPlan", resource) when { resource.tools.contains("http") };\n',
      }),
    );
    const decided = policy.authorize(submission('dora'));
    expect(decided).toMatchObject({
      decision: 'deny',
      level: 'hard-mandatory',
      determiningPolicies: ['no-http-ever'],
    });
    expect(decided.overridable).toBeUndefined();
    expect(policy.override(decided, { name: 'ivy@example.com' }, 'incident')).toMatch(/cannot be overridden/);
  });

  it('nothing permitting is hard: soft and advisory forbids do not turn a missing permit into an override', async () => {
    const policy = await PolicySet.load(
      await policyDir({ 'rules.cedar': levels['rules.cedar'].replace(PERMIT, '') }),
    );
    const decided = policy.authorize(submission('dora'));
    expect(decided).toMatchObject({ decision: 'deny', level: 'hard-mandatory', determiningPolicies: [] });
  });

  it.each([
    ['@enforcement("log-only")\nforbid (principal, action, resource);', /"log-only"\) is not a level/],
    [
      '@enforcement("advisory")\npermit (principal, action, resource);',
      /applies to a forbid; a permit always binds/,
    ],
    ['@enforcement("soft-mandatory")\nforbid (principal, action, resource);', /needs @overrideBy/],
    [
      '@enforcement("soft-mandatory")\n@overrideBy("two words")\nforbid (principal, action, resource);',
      /needs @overrideBy/,
    ],
    [
      '@overrideBy("ic")\nforbid (principal, action, resource);',
      /applies to a soft-mandatory forbid; this one is hard-mandatory/,
    ],
  ])('refuses a wrong annotation, located: %s', async (text, message) => {
    const dir = await policyDir({ 'a.cedar': `${PERMIT}\n${text}\n` });
    const error = await PolicySet.load(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolicyLoadError);
    const problem = (error as PolicyLoadError).problems.find((p) => p.code === 'policy-enforcement');
    expect(problem?.message).toMatch(message);
    expect(problem?.location).toMatchObject({ file: join(dir, 'a.cedar'), line: 4 });
  });

  it('an override is never granted to someone outside the group, whatever their name or reason', async () => {
    const policy = await PolicySet.load(await policyDir(levels));
    const decided = policy.authorize(submission('dora'));
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ maxLength: 80 }),
        (name, reason) => {
          fc.pre(!/^\s*ivy@example\.com\s*$/i.test(name));
          const released = policy.override(decided, { name }, reason);
          return typeof released === 'string';
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the terminal answer "override <reason>"', () => {
  it('is an approval that carries the reason; without one it is refused with how to write it', () => {
    const opts = { kind: 'plan' as const, stepIds: ['a'], by: 'ivy' };
    expect(parseApproval('override incident 4711: ship the fix', opts)).toEqual({
      decision: 'APPROVE',
      by: 'ivy',
      override: { reason: 'incident 4711: ship the fix' },
    });
    expect(parseApproval('override', opts)).toMatch(/write why after "override"/);
  });
});
