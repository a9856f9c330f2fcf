/**
 * What an execution is pinned to at submission (PLAN_CREATED's `integrity`) and the event that
 * says the engine was found running something else (INTEGRITY_MISMATCH).
 */
import { z } from 'zod';

export const Sha256Schema = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'sha256:<64 hex digits>');

/** PLAN_CREATED's pin: the compiled definition and the policy set the plan was submitted under. */
export const IntegrityPinSchema = z.object({
  /** lib/runtime/shared/definition-hash.ts over `machines`' definitions, as deployed. */
  definition_hash: Sha256Schema,
  /** The state machine versions the execution runs: the main one first, then each part in the compiler's order. */
  machines: z.array(z.string().min(1)).min(1),
  /** The Cedar policy set in force at submission (`PolicySet.digest`: its policies, groups and schema). */
  policy_hash: Sha256Schema,
});
export type IntegrityPin = z.infer<typeof IntegrityPinSchema>;

/** What is compared with its pin. */
export const INTEGRITY_CHECKS = ['definition', 'policy'] as const;
export type IntegrityCheck = (typeof INTEGRITY_CHECKS)[number];

/** Where the comparison was made: the plan gate's start, a step, its contract, a rollback, `plangate resume`, a plan-gate approval. */
export const INTEGRITY_MOMENTS = ['start', 'step', 'contract', 'rollback', 'resume', 'approval'] as const;
export type IntegrityMoment = (typeof INTEGRITY_MOMENTS)[number];

export const IntegrityMismatchDetailsSchema = z.object({
  check: z.enum(INTEGRITY_CHECKS),
  at: z.enum(INTEGRITY_MOMENTS),
  /** The pinned hash. */
  expected: Sha256Schema,
  /** The hash of what is in force, or why it could not be read (`unreadable: …`). */
  found: z.string(),
  /** What was refused and how to go on. */
  message: z.string(),
});
export type IntegrityMismatchDetails = z.infer<typeof IntegrityMismatchDetailsSchema>;
