/**
 * lib/policy: the policy set loads a directory of Cedar files against plangate's schema (every
 * problem located as file:line:col), names each policy by its @id or file:line, reads the groups
 * file, and decides requests with the ids of the policies that decided.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostsOfStrings as hostsIn } from '../../lib/plan/destinations.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { callFacts, gateEntity, planEntity, planFacts, stepEntity } from '../../lib/policy/entities.ts';
import { defaultPolicyDir, PolicyLoadError, PolicySet, splitPolicies } from '../../lib/policy/policy-set.ts';

async function policyDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-policy-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const plan = PlanSchema.parse({
  id: 'cleanup',
  objective: 'Remove the build output and tell the team',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'clean',
      description: 'Remove the build output',
      tool: 'shell',
      args: { command: 'rm -rf dist' },
      requiresApproval: true,
    },
    {
      id: 'notify',
      description: 'Tell the team',
      tool: 'http',
      dependsOn: ['clean'],
      args: { method: 'POST', url: 'https://hooks.example.com/team', body: 'done' },
    },
  ],
});
const identity = { id: plan.id, version: 1, digest: 'sha256:abc' };

describe('the facts policy judges', () => {
  it('are computed by the harness: tools, hosts, destructive marks, own gates', () => {
    const facts = planFacts(plan);
    expect(facts.tools).toEqual(['http', 'shell']);
    expect(facts.hosts).toEqual(['hooks.example.com']);
    expect(facts.steps.clean?.destructive.length).toBeGreaterThan(0);
    expect(facts.steps.clean?.ownGate).toBe(true);
    expect(planEntity(identity, facts, 'carol').attrs).toMatchObject({
      submitter: 'carol',
      destructiveSteps: 1,
      destructiveStepIds: ['clean'],
      ungatedDestructiveSteps: 0,
      stepCount: 2,
    });
  });

  it('count every tool the harness will call: rollbacks and contracts too', () => {
    const sneaky = PlanSchema.parse({
      ...plan,
      steps: [
        {
          id: 'note',
          description: 'Write a note',
          tool: 'echo',
          args: { message: 'hi' },
          contract: { kind: 'lambda', functionName: 'plangate-check' },
          rollback: { tool: 'lambda', args: { functionName: 'plangate-undo' } },
        },
      ],
    });
    expect(planFacts(sneaky).tools).toEqual(['echo', 'lambda']);
  });

  it('find hosts in every string, ignoring placeholders filled at run time', () => {
    expect(
      hostsIn({ command: 'curl -s https://Evil.example.net:8443/x | jq .', url: '${steps.a.url}' }),
    ).toEqual(['evil.example.net']);
    expect(hostsIn(['ssh://deploy@db.internal/x', 'http://[::1]:80/'])).toEqual(['[::1]', 'db.internal']);
    expect(callFacts({ tool: 'http', args: { url: 'https://api.example.com/v1' } }, false).hosts).toEqual([
      'api.example.com',
    ]);
  });
});

describe('PolicySet', () => {
  it('loads the shipped default set once per process', async () => {
    const first = await PolicySet.load();
    expect(await PolicySet.load()).toBe(first);
    expect(first.policies.map((p) => p.id)).toContain('no-self-approval');
  });

  it('decides with the default set: everything permitted except its forbids', async () => {
    const set = await PolicySet.load();
    const facts = planFacts(plan);
    const submitted = planEntity(identity, facts, 'carol');
    expect(
      set.authorize({
        principal: { name: 'carol' },
        action: 'SubmitPlan',
        resource: submitted,
        context: { channel: 'api', solo: false },
      }),
    ).toEqual({ decision: 'allow', determiningPolicies: ['baseline-permit'], errors: [] });
    expect(
      set.authorize({
        principal: { name: 'carol' },
        action: 'ApprovePlanGate',
        resource: submitted,
        context: { round: 1, votesSoFar: 0 },
      }),
    ).toMatchObject({ decision: 'deny', determiningPolicies: ['no-self-approval'] });
    expect(
      set.authorize({
        principal: { name: 'dave' },
        action: 'AutoApprove',
        resource: submitted,
        context: { gate: 'plan' },
      }),
    ).toMatchObject({ decision: 'deny', determiningPolicies: ['auto-approve-only-harmless-plans'] });
    // A step whose resolved call turns out destructive, without its own gate, does not run.
    const resolved = callFacts({ tool: 'shell', args: { command: 'rm -rf /srv/data' } }, false);
    expect(
      set.authorize({
        principal: { name: 'carol' },
        action: 'RunStep',
        resource: stepEntity(identity, 'notify', resolved, { args: { command: 'rm -rf /srv/data' } }),
        entities: [submitted],
        context: { attempt: 1, rollback: false, sandboxed: true },
      }),
    ).toMatchObject({ decision: 'deny', determiningPolicies: ['destructive-call-needs-own-gate'] });
  });

  it('denies a request that does not fit the schema, saying why', async () => {
    const set = await PolicySet.load();
    const decided = set.authorize({
      principal: { name: 'carol' },
      action: 'RunStep',
      resource: stepEntity(identity, 'notify', planFacts(plan).steps.notify),
      context: { attempt: 'first', rollback: false, sandboxed: true },
    });
    expect(decided.decision).toBe('deny');
    expect(decided.errors.join()).toMatch(/attempt/);
  });

  it('counts approvals per group on a gate: "two distinct sre approvers" is one rule', async () => {
    const dir = await policyDir({
      'all.cedar': 'permit (principal, action, resource);',
      'sre.cedar': `
// Destructive content needs two sre approvers.
@id("two-sre")
forbid (principal, action == Action::"CompleteGate", resource)
when { resource.destructive }
unless { resource.hasTag("sre") && resource.getTag("sre") >= 2 };
`,
      'groups.json': JSON.stringify({ sre: ['alice', 'bob'] }),
    });
    const set = await PolicySet.load(dir);
    const facts = planFacts(plan);
    const gate = (names: string[], groups: Record<string, string[]> = {}) =>
      gateEntity(
        { kind: 'plan', plan: identity, submitter: 'carol', quorum: 1 },
        facts,
        names.map((name) => ({ name, groups: set.groupsOf({ name, groups: groups[name] ?? [] }) })),
      );
    const complete = (names: string[], groups?: Record<string, string[]>) =>
      set.authorize({
        principal: { name: names.at(-1) as string },
        action: 'CompleteGate',
        resource: gate(names, groups),
        entities: [planEntity(identity, facts, 'carol')],
      });
    expect(complete(['friend'])).toMatchObject({ decision: 'deny', determiningPolicies: ['two-sre'] });
    expect(complete(['friend', 'alice'])).toMatchObject({ decision: 'deny' });
    expect(complete(['alice', 'bob'])).toMatchObject({ decision: 'allow' });
    // A group a verified token carries counts as well as the groups file's.
    expect(complete(['alice', 'erin'], { erin: ['sre'] })).toMatchObject({ decision: 'allow' });
  });

  it('refuses a directory that does not load, every problem located in its file', async () => {
    const dir = await policyDir({
      'a.cedar': `// first
@id("good")
permit (principal, action == Action::"SubmitPlan", resource);

permit (principal, action, resource) when { 1 + };
`,
      'b.cedar': `@id("good")
permit (principal, action, resource);
`,
      'groups.json': JSON.stringify({ 'bad group': ['x'] }),
    });
    const error = await PolicySet.load(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolicyLoadError);
    const problems = (error as PolicyLoadError).problems.map(
      (p) =>
        `${p.location.file.slice(dir.length + 1)}:${p.location.line ?? ''}:${p.location.column ?? ''} ${p.code}`,
    );
    expect(problems).toEqual([
      'a.cedar:5:49 cedar-parse',
      'b.cedar:1:1 duplicate-policy-id',
      'groups.json:: groups-file',
    ]);
  });

  it('locates a policy that does not fit the schema at the offending expression', async () => {
    const dir = await policyDir({
      'x.cedar': `permit (principal, action, resource);

forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.toolz.contains("lambda") };
`,
    });
    const checked = await PolicySet.check(dir);
    expect(checked.problems).toEqual([
      expect.objectContaining({
        code: 'cedar-validation',
        location: { file: join(dir, 'x.cedar'), line: 4, column: 8 },
        message: expect.stringMatching(/toolz/),
      }),
    ]);
    expect(checked.policies.map((p) => p.id)).toEqual(['x.cedar:1', 'x.cedar:3']);
  });

  it('splits policies at semicolons outside strings and comments', () => {
    expect(
      splitPolicies(
        'permit (principal, action, resource) when { "a;b" == "a;b" }; // c;\nforbid (principal, action, resource);',
      ).map((c) => c.text.trim()),
    ).toEqual([
      'permit (principal, action, resource) when { "a;b" == "a;b" };',
      '// c;\nforbid (principal, action, resource);',
    ]);
  });
});

describe('PolicySet.digest: the policy set an execution is pinned to', () => {
  it('is the same for the same policies wherever they sit, and changes when one is removed or a group changes', async () => {
    const shipped = await PolicySet.load();
    const copy = mkdtempSync(join(tmpdir(), 'plangate-digest-'));
    cpSync(defaultPolicyDir(), copy, { recursive: true });
    expect((await PolicySet.load(copy)).digest).toBe(shipped.digest);
    expect(shipped.digest).toMatch(/^sha256:[0-9a-f]{64}$/);

    // The same policies in one file, with other blank lines: the same set.
    const merged = mkdtempSync(join(tmpdir(), 'plangate-digest-'));
    const texts = ['approvals.cedar', 'baseline.cedar', 'risk.cedar'].map((f) =>
      readFileSync(join(defaultPolicyDir(), f), 'utf8'),
    );
    writeFileSync(join(merged, 'all.cedar'), texts.join('\n\n'));
    expect((await PolicySet.load(merged)).digest).toBe(shipped.digest);

    const fewer = mkdtempSync(join(tmpdir(), 'plangate-digest-'));
    cpSync(defaultPolicyDir(), fewer, { recursive: true });
    rmSync(join(fewer, 'risk.cedar'));
    expect((await PolicySet.load(fewer)).digest).not.toBe(shipped.digest);

    const grouped = mkdtempSync(join(tmpdir(), 'plangate-digest-'));
    cpSync(defaultPolicyDir(), grouped, { recursive: true });
    writeFileSync(join(grouped, 'groups.json'), '{"sre": ["alice"]}');
    expect((await PolicySet.load(grouped)).digest).not.toBe(shipped.digest);
  });
});
