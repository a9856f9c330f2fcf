/**
 * Run-time deployment through the real @aws-sdk/client-sfn against the embedded engine's Step
 * Functions API server (endpoint override; no mocked client).
 */
import {
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ListStateMachinesCommand,
  ListStateMachineVersionsCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePlan, PLACEHOLDERS } from '../../lib/compiler/index.ts';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import type { TaskInvocation } from '../../lib/engine/types.ts';
import {
  deployPlan,
  partOrder,
  placeholdersIn,
  planStateMachineName,
  stateMachineNames,
} from '../../lib/launch/deploy-plan.ts';
import { planDigest } from '../../lib/plan/digest.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import type { Plan } from '../../lib/plan/schema.ts';

const ACCOUNT = '123456789012';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/plangate-runtime-plans`;
const SUBSTITUTIONS: Record<string, string> = Object.fromEntries(
  Object.values(PLACEHOLDERS).map((name) => [
    name,
    `arn:aws:lambda:us-east-1:${ACCOUNT}:function:plangate-${name}`,
  ]),
);

let engine: Engine;
let server: EngineServer;
let sfn: SFNClient;
let plan: Plan;
const invocations: TaskInvocation[] = [];

beforeAll(async () => {
  engine = createEngine({
    storeDir: undefined,
    accountId: ACCOUNT,
    region: 'us-east-1',
    // The gate is the first state: record it and leave the execution waiting for its token.
    invokeResource: async (invocation) => {
      invocations.push(invocation);
      return {};
    },
  });
  server = await startEngineServer({ engine });
  sfn = new SFNClient({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' },
  });
  const loaded = await loadPlan('examples/release-api.json');
  if (!loaded.plan) throw new Error('examples/release-api.json did not load');
  plan = loaded.plan;
});

afterAll(async () => {
  sfn?.destroy();
  await server?.close();
  await engine?.close();
});

async function versionsOf(stateMachineArn: string): Promise<string[]> {
  const out = await sfn.send(new ListStateMachineVersionsCommand({ stateMachineArn }));
  return (out.stateMachineVersions ?? []).map((v) => v.stateMachineVersionArn as string);
}

describe('deployPlan', () => {
  it('creates the machine and publishes a version whose description carries the digest', async () => {
    const deployed = await deployPlan({
      sfn,
      plan,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg1',
    });
    const digest = planDigest(plan);
    expect(deployed.changed).toBe(true);
    expect(deployed.digest).toBe(digest);
    expect(deployed.stateMachineArn).toBe(`arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:pg1-${plan.id}`);
    expect(deployed.stateMachineVersionArn).toBe(`${deployed.stateMachineArn}:1`);
    // No part: only its step machines beside it.
    expect(deployed.parts.map((p) => p.name)).toEqual(
      compilePlan(plan)
        .definitions.slice(1)
        .map((d) => `pg1-${d.name}`),
    );
    for (const part of deployed.parts) expect(part.name).toMatch(/^pg1-[\w-]+-step-\d+$/);

    const version = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: deployed.stateMachineVersionArn }),
    );
    expect(version.description).toBe(`plan ${plan.id} v${plan.version} sha256:${digest}`);
    expect(version.roleArn).toBe(ROLE_ARN);
    // The compiler's definition with only the placeholders replaced: the platform's functions,
    // and its step machines pinned to their published versions.
    const [root, ...stepMachines] = compilePlan(plan).definitions;
    const compiled = root!.json;
    const values: Record<string, string> = { ...SUBSTITUTIONS };
    stepMachines.forEach((d, i) => {
      values[d.arnSubstitution!] = deployed.parts[i]!.stateMachineVersionArn;
    });
    let expected = compiled;
    for (const name of placeholdersIn(compiled)) expected = expected.split(`\${${name}}`).join(values[name]!);
    expect(version.definition).toBe(expected);
    expect(version.definition).not.toContain('${');
  });

  it('is idempotent for the same digest: same version, nothing published', async () => {
    const first = await deployPlan({
      sfn,
      plan,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg2',
    });
    const again = await deployPlan({
      sfn,
      plan,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg2',
    });
    expect(again.changed).toBe(false);
    expect(again.stateMachineVersionArn).toBe(first.stateMachineVersionArn);
    expect(await versionsOf(first.stateMachineArn)).toEqual([first.stateMachineVersionArn]);
  });

  it('publishes a new version for a new plan version, and the old one stays', async () => {
    const first = await deployPlan({
      sfn,
      plan,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg3',
    });
    const next: Plan = { ...plan, version: plan.version + 1, objective: `${plan.objective} (revised)` };
    const second = await deployPlan({
      sfn,
      plan: next,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg3',
    });
    expect(second.changed).toBe(true);
    expect(second.stateMachineArn).toBe(first.stateMachineArn);
    expect(second.stateMachineVersionArn).toBe(`${first.stateMachineArn}:2`);
    expect(await versionsOf(first.stateMachineArn)).toEqual([
      second.stateMachineVersionArn,
      first.stateMachineVersionArn,
    ]);
    const described = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: second.stateMachineVersionArn }),
    );
    expect(described.description).toContain(`v${next.version} sha256:${planDigest(next)}`);
  });

  it('refuses a missing substitution, naming it, before creating anything', async () => {
    const { [PLACEHOLDERS.gate]: _gate, ...withoutGate } = SUBSTITUTIONS;
    await expect(
      deployPlan({ sfn, plan, roleArn: ROLE_ARN, substitutions: withoutGate, namePrefix: 'pg4' }),
    ).rejects.toThrow(/no substitution for \$\{GateFunctionArn\}/);
    const listed = await sfn.send(new ListStateMachinesCommand({}));
    expect((listed.stateMachines ?? []).map((m) => m.name)).not.toContain(`pg4-${plan.id}`);
  });

  it('refuses a role ARN that is not an IAM role', async () => {
    await expect(
      deployPlan({
        sfn,
        plan,
        roleArn: 'arn:aws:s3:::bucket',
        substitutions: SUBSTITUTIONS,
        namePrefix: 'pg5',
      }),
    ).rejects.toThrow(/roleArn/);
  });

  it('deploys a split plan: parts first, the parent starts each part pinned to its published version', async () => {
    const compileOptions = { maxHistoryEvents: 120 };
    const deployed = await deployPlan({
      sfn,
      plan: (await loadPlan('examples/local-demo.yaml')).plan!,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg6',
      compileOptions,
    });
    expect(deployed.parts.filter((p) => p.name.includes('-part-')).length).toBeGreaterThan(1);
    const root = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: deployed.stateMachineVersionArn }),
    );
    for (const part of deployed.parts) {
      expect(part.name).toMatch(/^pg6-local-demo-(part|step)-\d+$/);
      expect(part.stateMachineVersionArn).toBe(`${part.stateMachineArn}:1`);
    }
    // Every part is started by the root or by another part, always by version ARN.
    const startedBy = [root.definition!];
    for (const part of deployed.parts) {
      const described = await sfn.send(
        new DescribeStateMachineCommand({ stateMachineArn: part.stateMachineVersionArn }),
      );
      startedBy.push(described.definition!);
    }
    for (const part of deployed.parts) {
      expect(startedBy.some((definition) => definition.includes(`"${part.stateMachineVersionArn}"`))).toBe(
        true,
      );
    }
    const again = await deployPlan({
      sfn,
      plan: (await loadPlan('examples/local-demo.yaml')).plan!,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg6',
      compileOptions,
    });
    expect(again.changed).toBe(false);
    expect(again.parts.every((part) => !part.changed)).toBe(true);
  });

  it('deploys a machine that runs: an execution of the version reaches the plan gate', async () => {
    const deployed = await deployPlan({
      sfn,
      plan,
      roleArn: ROLE_ARN,
      substitutions: SUBSTITUTIONS,
      namePrefix: 'pg7',
    });
    const before = invocations.length;
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: deployed.stateMachineVersionArn, input: '{}' }),
    );
    for (let i = 0; i < 200 && invocations.length === before; i++)
      await new Promise((r) => setTimeout(r, 10));
    const gate = invocations[before];
    expect(gate?.resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
    expect(JSON.stringify(gate?.parameters)).toContain(SUBSTITUTIONS[PLACEHOLDERS.gate]);
    const running = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(running.status).toBe('RUNNING');
    await sfn.send(new StopExecutionCommand({ executionArn }));
  });
});

describe('state machine names', () => {
  it('keeps names within 80 characters, distinct, with the part suffix intact', () => {
    const long = 'p'.repeat(64);
    const names = stateMachineNames(planStateMachineName('plangate', long), [
      { name: long },
      { name: `${long}-part-1` },
      { name: `${long}-part-12` },
    ]);
    expect(names.every((name) => name.length <= 80 && /^[A-Za-z0-9_-]+$/.test(name))).toBe(true);
    expect(new Set(names).size).toBe(3);
    expect(names[1]).toMatch(/-part-1$/);
    expect(names[2]).toMatch(/-part-12$/);
    expect(stateMachineNames('plangate-short', [{ name: 'short' }, { name: 'short-part-2' }])).toEqual([
      'plangate-short',
      'plangate-short-part-2',
    ]);
  });

  it('are valid, within 80 characters, keep their part suffix and stay distinct (property)', () => {
    const id = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/);
    const prefix = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
    fc.assert(
      fc.property(prefix, id, id, fc.integer({ min: 1, max: 999 }), (namePrefix, a, b, part) => {
        const [rootA, partA] = stateMachineNames(planStateMachineName(namePrefix, a), [
          { name: a },
          { name: `${a}-part-${part}` },
        ]);
        const [rootB] = stateMachineNames(planStateMachineName(namePrefix, b), [{ name: b }]);
        for (const name of [rootA!, partA!, rootB!]) {
          expect(name.length).toBeLessThanOrEqual(80);
          expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
        }
        expect(partA!.endsWith(`-part-${part}`)).toBe(true);
        expect(partA).not.toBe(rootA);
        if (a !== b) expect(rootA).not.toBe(rootB);
      }),
      { numRuns: 500 },
    );
  });

  it('orders parts so each comes after the parts it starts', () => {
    const parts = [
      {
        resources: [{ kind: 'stateMachine', placeholder: 'PartStateMachineArn2' }] as const,
        arnSubstitution: 'PartStateMachineArn1',
      },
      { resources: [], arnSubstitution: 'PartStateMachineArn2' },
    ];
    expect(partOrder(parts)).toEqual([1, 0]);
    expect(() =>
      partOrder([
        {
          resources: [{ kind: 'stateMachine', placeholder: 'PartStateMachineArn1' }],
          arnSubstitution: 'PartStateMachineArn1',
        },
      ]),
    ).toThrow(/starts itself/);
  });
});
