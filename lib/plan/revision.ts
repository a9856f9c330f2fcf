/**
 * A plan as a gate's revision runs it: each modified step's args with the revision's overrides on
 * top, merged by name as the engine applies them (`{...args, ...argOverrides}`). Skipped steps
 * stay: what is judged is everything that may still run. What a gate approves, policy judges on
 * this plan, never on the text first submitted.
 */
import type { Plan } from './schema.ts';

export function planAsRevised(
  plan: Plan,
  argOverrides: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
): Plan {
  return {
    ...plan,
    steps: plan.steps.map((step) => {
      const overrides = Object.hasOwn(argOverrides, step.id) ? argOverrides[step.id] : undefined;
      return overrides ? { ...step, args: { ...step.args, ...overrides } } : step;
    }),
  };
}
