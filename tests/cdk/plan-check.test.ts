/**
 * What the CDK constructs deploy is checked as `plangate validate` checks it, so synth fails on a
 * plan the platform would refuse at launch: here, more steps than one run's PLAN_CREATED can record.
 */
import { describe, expect, it } from 'vitest';
import { checkedPlan, InvalidPlanError } from '../../lib/cdk/plan-check.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const chain = (n: number) =>
  PlanSchema.parse(
    echoChainPlan(
      `chain-${n}`,
      Array.from({ length: n }, (_, i) => `s${i + 1}`),
    ),
  );

describe('checkedPlan', () => {
  it('refuses a plan too large for one run, naming the limit at /steps', () => {
    let thrown: unknown;
    try {
      checkedPlan(chain(2_000));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidPlanError);
    const problems = (thrown as InvalidPlanError).problems;
    expect(problems.map((p) => [p.code, p.location.pointer])).toEqual([['too-many-steps', '/steps']]);
    expect((thrown as Error).message).toMatch(
      /2000 steps are too many for one run.*about \d+ steps like these fit/,
    );
  }, 60_000);

  it('accepts a plan within the limits', () => {
    expect(checkedPlan(chain(200)).steps).toHaveLength(200);
  }, 60_000);
});
