/**
 * Agent steps with short limits (issue 22): every timeout and wall-clock budget that passes
 * validation compiles to a definition the engine accepts at CreateStateMachine (its own
 * validator, the one AWS's rules are mirrored in), heartbeat strictly below the timeout; and the
 * limits no definition can hold are refused by validation, located, never at run.
 */
import { describe, expect, it } from 'vitest';
import { CompileError, compilePlan } from '../../lib/compiler/index.ts';
import { validateDefinition } from '../../lib/engine/validate/index.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

function agentPlan(limits: { timeoutSeconds?: number; wallClockSeconds?: number }): Plan {
  return PlanSchema.parse({
    id: 'short-agent',
    objective: 'Review the greeting within a minute',
    ...(limits.wallClockSeconds !== undefined
      ? { budget: { wallClockSeconds: limits.wallClockSeconds } }
      : {}),
    steps: [
      {
        id: 'write',
        description: 'Write hello to greeting.txt',
        tool: 'shell',
        args: { command: 'echo hello > greeting.txt' },
        contract: { kind: 'command', command: 'test -f greeting.txt' },
      },
      {
        id: 'review',
        description: 'Review the greeting',
        dependsOn: ['write'],
        target: 'reviewer',
        ...(limits.timeoutSeconds !== undefined ? { timeoutSeconds: limits.timeoutSeconds } : {}),
        task: 'Write APPROVED to review.txt',
        contract: { kind: 'command', command: 'test -s review.txt' },
      },
      {
        id: 'report',
        description: 'Report the verdict',
        dependsOn: ['review'],
        tool: 'echo',
        args: { message: 'done' },
        contract: { kind: 'assert', expression: 'output.message = "done"' },
      },
    ],
  });
}

/** The compiled definitions with the activity placeholder filled in, as deploying does. */
function deployedDefinitions(plan: Plan): { text: string; activity: Record<string, unknown> | undefined }[] {
  return compilePlan(plan).definitions.map((definition) => {
    const text = definition.json.replace(
      /\$\{AgentActivityArn_(\w+)\}/g,
      'arn:aws:states:us-east-1:123456789012:activity:plangate-$1',
    );
    return { text, activity: activityTask(JSON.parse(text)) };
  });
}

/** The activity Task, wherever the layout nests it (a Parallel branch, say). */
function activityTask(value: unknown): Record<string, unknown> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.Resource === 'string' && record.Resource.includes(':activity:')) return record;
  for (const child of Object.values(record)) {
    const found = activityTask(child);
    if (found) return found;
  }
  return undefined;
}

const LIMITS = [
  { timeoutSeconds: 2 },
  { timeoutSeconds: 30 },
  { timeoutSeconds: 60 },
  { timeoutSeconds: 61 },
  { timeoutSeconds: 900 },
  { wallClockSeconds: 2 },
  { wallClockSeconds: 45 },
  { wallClockSeconds: 60 },
  { timeoutSeconds: 60, wallClockSeconds: 90 },
];

describe('agent steps with short limits', () => {
  it.each(LIMITS)('%o validates, compiles and passes the engine validator', async (limits) => {
    const plan = agentPlan(limits);
    expect((await validatePlan(plan, { checkShell: false })).problems).toEqual([]);
    const definitions = deployedDefinitions(plan);
    for (const { text } of definitions) expect(validateDefinition(text)).toEqual([]);
    const activity = definitions.find((d) => d.activity)?.activity;
    const timeout = Math.min(limits.timeoutSeconds ?? 900, limits.wallClockSeconds ?? 900);
    expect(activity).toMatchObject({ TimeoutSeconds: timeout });
    const heartbeat = activity?.HeartbeatSeconds as number;
    expect(heartbeat).toBeGreaterThanOrEqual(1);
    expect(heartbeat).toBeLessThan(timeout);
    expect(heartbeat).toBe(Math.min(60, timeout - 1));
    // The worker is told the same heartbeat the engine enforces.
    expect(activity?.Arguments).toMatchObject({ heartbeatSeconds: heartbeat, timeoutSeconds: timeout });
  });

  it('refuses, located, the limits no heartbeat fits in: the step’s own, or the budget’s', async () => {
    const byStep = await validatePlan(agentPlan({ timeoutSeconds: 1 }), { checkShell: false });
    expect(byStep.problems.map((p) => [p.code, p.location.pointer])).toEqual([
      ['agent-timeout-too-short', '/steps/1/timeoutSeconds'],
    ]);
    const byBudget = await validatePlan(agentPlan({ wallClockSeconds: 1 }), { checkShell: false });
    expect(byBudget.problems.map((p) => [p.code, p.location.pointer, p.message])).toEqual([
      [
        'agent-timeout-too-short',
        '/budget/wallClockSeconds',
        expect.stringContaining("the plan's wall-clock budget gives it 1 s"),
      ],
    ]);
    expect(() => compilePlan(agentPlan({ timeoutSeconds: 1 }))).toThrow(CompileError);
  });
});
