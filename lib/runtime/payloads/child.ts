/** Child state machines of split plans. */
import { z } from 'zod';
import { IdSchema } from '../../plan/schema.ts';
import { ArgOverridesSchema, PlanIdentitySchema, StepEntrySchema } from './shared.ts';

/**
 * Input of a child state machine (started with `states:startExecution.sync:2`): the parent's
 * plan identity and modifications, and the ledger entries the child's steps depend on. The
 * child's output is its {@link Ledger} (its own steps only). Children have no plan gate: the
 * parent's approval covers them (same digest).
 */
export const ChildInputSchema = z.object({
  plan: PlanIdentitySchema,
  /** The parent execution's ARN; journal events use it so one run has one event stream. */
  executionId: z.string().min(1),
  skipSteps: z.array(IdSchema),
  argOverrides: ArgOverridesSchema,
  steps: z.record(z.string(), StepEntrySchema),
});
export type ChildInput = z.infer<typeof ChildInputSchema>;
