import { describe, expect, it } from 'vitest';
import { deployability } from '../../lib/compiler/index.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const plan = (extra: (p: ReturnType<typeof echoChainPlan>) => void = () => {}) => {
  const input = echoChainPlan('limits', ['a', 'b', 'c']);
  extra(input);
  return PlanSchema.parse(input);
};

describe('deployability', () => {
  it('finds nothing in a plan Step Functions can take, and hands back the compiled plan', () => {
    const { problems, result } = deployability(plan());
    expect(problems).toEqual([]);
    expect(result?.definitions.length).toBeGreaterThan(0);
  });

  it('reports history beyond the limit, pointing at the steps', () => {
    const { problems } = deployability(plan(), { compile: { maxHistoryEvents: 20 }, file: 'p.json' });
    expect(problems).toEqual([
      expect.objectContaining({ code: 'history-too-long', location: { file: 'p.json', pointer: '/steps' } }),
    ]);
  });

  it('points a payload over 256 KiB at the value that makes it large', () => {
    const { problems } = deployability(
      plan((p) => {
        (p.steps[2] as { args: { message: string } }).args.message = 'y'.repeat(300_000);
      }),
    );
    expect(problems.map((p) => [p.code, p.location.pointer])).toEqual([
      ['payload-too-large', '/steps/2/args/message'],
    ]);
    expect(problems[0]?.message).toMatch(/262144 bytes \(256 KiB\)/);
  });
});
