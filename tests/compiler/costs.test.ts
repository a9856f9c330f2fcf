/** The report's per-step costs are counted on the states each step compiles to. */
import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';

describe('per-step cost', () => {
  const plan = {
    id: 'costs',
    objective: 'one step of each kind',
    steps: [
      { id: 'tool', description: 'A tool step', tool: 'shell', args: { command: 'true' } },
      {
        id: 'human',
        description: 'A person does it',
        tool: 'shell',
        requiresHuman: true,
        dependsOn: ['tool'],
      },
      {
        id: 'agent',
        description: 'An agent does it',
        target: 'claude',
        task: 'Do it',
        timeoutSeconds: 1800,
        dependsOn: ['human'],
      },
    ],
  };

  it('counts a human step’s gate as the task-token wait it is: 2 states, 11 history events', () => {
    const perStep = new Map(compilePlan(plan).report.perStep.map((s) => [s.stepId, s]));
    expect(perStep.get('tool')).toMatchObject({ states: 2, transitions: 2, historyEvents: 10 });
    // Run (waitForTaskToken: entered, scheduled, started, submitted, succeeded, exited) + Check (5).
    expect(perStep.get('human')).toMatchObject({ states: 2, transitions: 2, historyEvents: 11 });
    // Start (5) → Dispatch (Choice, 2) → Run (the activity, 5) → Check (5).
    expect(perStep.get('agent')).toMatchObject({ states: 4, transitions: 4, historyEvents: 17 });
  });

  it('bills a step machine’s runner and checker to the step that calls it', () => {
    const perStep = new Map(
      compilePlan(plan, { stepMachines: 'always' }).report.perStep.map((s) => [s.stepId, s]),
    );
    expect(perStep.get('tool')).toMatchObject({ states: 1, transitions: 3, historyEvents: 6 });
    // Human and agent steps keep their states in the plan machine.
    expect(perStep.get('human')).toMatchObject({ states: 2, transitions: 2, historyEvents: 11 });
  });
});
