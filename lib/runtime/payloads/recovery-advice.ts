/**
 * Seed 001's third recovery strategy, asking the model: at an escalation of a failure no recipe
 * covers (`unknown`), a run with a planner asks it what to do. The model proposes one strategy
 * with its reasons; a person still decides. What the model answers is hostile input: it is read
 * only through {@link RecoverySuggestionSchema} (bounded sizes, closed shapes).
 */
import { z } from 'zod';
import { StepSchema } from '../../plan/schema.ts';

/** Seed 001's four: retry with different args, skip and continue, insert recovery steps, abort. */
export const RECOVERY_STRATEGIES = ['retry_with_args', 'skip', 'insert_steps', 'abort'] as const;
export type RecoveryStrategy = (typeof RECOVERY_STRATEGIES)[number];

/** Strategies that change the plan: accepted, they make a new version that goes through the gate. */
export const REVISING_STRATEGIES: readonly RecoveryStrategy[] = ['retry_with_args', 'insert_steps'];

const Reasons = z.string().trim().min(1).max(2000);

/** What the model may answer: one strategy, its reasons, and what a revising one changes. */
export const RecoverySuggestionSchema = z.discriminatedUnion('strategy', [
  z.strictObject({
    strategy: z.literal('retry_with_args'),
    reasons: Reasons,
    /** The failed step's new arg values (merged over its args; zod drops a `__proto__` key). */
    args: z
      .record(z.string(), z.unknown())
      .refine((args) => Object.keys(args).length > 0, 'name at least one arg to change'),
  }),
  z.strictObject({ strategy: z.literal('skip'), reasons: Reasons }),
  z.strictObject({
    strategy: z.literal('insert_steps'),
    reasons: Reasons,
    /** New steps, run before the failed step (which then depends on them). */
    steps: z.array(StepSchema).min(1).max(5),
  }),
  z.strictObject({ strategy: z.literal('abort'), reasons: Reasons }),
]);
export type RecoverySuggestion = z.infer<typeof RecoverySuggestionSchema>;

/** The model's suggestion as every channel shows it, with who made it and what it cost. */
export const RecoveryAdviceSchema = z.object({
  suggestion: RecoverySuggestionSchema,
  provider: z.string(),
  model: z.string(),
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  /** A revising suggestion: the new version of the plan it makes (validated, kept by the host). */
  revision: z.object({ version: z.number().int().min(1), digest: z.string() }).optional(),
});
export type RecoveryAdvice = z.infer<typeof RecoveryAdviceSchema>;

/**
 * Accepting the suggestion, as a person answers it (terminal `accept`, the page's button): the
 * approvals API turns it into the escalation decision it means (SKIP, ABORT, or, where the host
 * launches revisions, ABORT of this execution for the new version), never sent to the machine.
 */
export const ACCEPT_SUGGESTION = 'ACCEPT_SUGGESTION';
