/** Join Lambda (`${JoinFunctionArn}`): exact joins across Parallel branches. */
import { z } from 'zod';
import { IdSchema } from '../../plan/schema.ts';
import { ExecutionScope, StepEntrySchema } from './shared.ts';

/**
 * A step whose dependencies are not all on its own branch waits on a join
 * (`lambda:invoke.waitForTaskToken`, action `wait`) for the dependencies on other branches;
 * each of those, after its checker (or skip), signals (`lambda:invoke`, action `signal`).
 * Signals may arrive before the wait registers: the Lambda stores both and, when every
 * predecessor has signalled and the token is registered, calls SendTaskSuccess once with a
 * {@link JoinReleaseSchema} output. Keyed by (executionId, stepId): idempotent on redelivery.
 */
export const JoinWaitRequestSchema = z.object({
  action: z.literal('wait'),
  ...ExecutionScope,
  /** The waiting step. */
  stepId: IdSchema,
  /** The predecessors it waits for (on other branches). */
  predecessors: z.array(IdSchema).min(1),
  /** `$states.context.Task.Token`. Secret: store it, never print it. */
  taskToken: z.string().min(1),
});
export type JoinWaitRequest = z.infer<typeof JoinWaitRequestSchema>;

export const JoinSignalRequestSchema = z.object({
  action: z.literal('signal'),
  ...ExecutionScope,
  /** The step that just finished. */
  stepId: IdSchema,
  entry: StepEntrySchema,
  /**
   * Entries of the step's transitive dependencies (those in its ledger): released with `entry`,
   * so the waiting step, and every step after it on its branch, can read any ancestor.
   */
  carried: z.record(z.string(), StepEntrySchema).default({}),
  /** The waiting steps this signal counts for. */
  successors: z.array(IdSchema).min(1),
});
export type JoinSignalRequest = z.infer<typeof JoinSignalRequestSchema>;

export const JoinRequestSchema = z.discriminatedUnion('action', [
  JoinWaitRequestSchema,
  JoinSignalRequestSchema,
]);
export type JoinRequest = z.infer<typeof JoinRequestSchema>;

/** SendTaskSuccess output that releases a join: the predecessors' entries. */
export const JoinReleaseSchema = z.object({ entries: z.record(z.string(), StepEntrySchema) });
export type JoinRelease = z.infer<typeof JoinReleaseSchema>;

/** The signal call's return value (informational). */
export const JoinSignalResultSchema = z.object({ released: z.array(IdSchema) });
export type JoinSignalResult = z.infer<typeof JoinSignalResultSchema>;
