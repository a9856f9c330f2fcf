/**
 * Rollback (seed 003): on abort, or to rehearse after a successful run, the compiled machine loops
 * `Roll back` (step runner) → `Check rollback` (contract checker) until the runner says `done`.
 * The journal decides what comes next (the steps that completed, in reverse order of their
 * TASK_COMPLETED), so the loop carries no list and a redelivered call picks up where it was.
 */
import { z } from 'zod';
import { AwsAccessSchema, ContractSchema, IdSchema, NetworkAccessSchema } from '../../plan/schema.ts';
import { ExecutionScope, PlanContextSchema, SecretDeclarationsSchema } from './shared.ts';

/** One step's rollback procedure, as the plan declares it (references unresolved). */
export const RollbackProcedureSchema = z.object({
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  description: z.string(),
  timeoutSeconds: z.number().int().positive(),
  /** The step's AWS access (`step.aws`): the rollback's process gets the run's session too. */
  aws: AwsAccessSchema.optional(),
  /** The hosts the step's processes may reach (`step.network`), through the sandbox's proxy. */
  network: NetworkAccessSchema.optional(),
});

/**
 * Input of the step runner's rollback mode. It reads the journal, takes the most recently
 * completed step that has a procedure and no ROLLBACK_COMPLETED / ROLLBACK_FAILED yet, writes
 * ROLLBACK_STARTED, resolves the args (`${steps.<id>.<name>}` from what TASK_COMPLETED
 * recorded) and calls the tool. A tool failure writes ROLLBACK_FAILED and returns `failed`.
 * Nothing left returns `done`; an earlier ROLLBACK_FAILED returns `failed` (undoing older steps
 * over a failed undo is not safe), so a call made again after it was recorded answers the same.
 *
 * A rollback whose last attempt started and never ended was cut short (kill -9 of the engine):
 * the runner answers `interrupted` without running anything, and its contract decides whether
 * the undo is already done (the checker's `interrupted` mode) or must run again (`rerun`).
 */
export const RollbackRunRequestSchema = z.object({
  kind: z.literal('rollback'),
  ...ExecutionScope,
  procedures: z.record(IdSchema, RollbackProcedureSchema),
  context: PlanContextSchema.optional(),
  secrets: SecretDeclarationsSchema.default([]),
  /** The run succeeded and this only proves the procedures (`--rehearse-rollback`). */
  rehearsal: z.boolean(),
  /**
   * The contract of an interrupted rollback did not hold: run it again if its last
   * ROLLBACK_STARTED is still this one (seq), else that rerun was itself cut short.
   */
  rerunAfter: z.number().int().nullish(),
  /**
   * The rollback states gave up (an attempt failed, or was cut short, more often than the
   * recipe retries): record ROLLBACK_FAILED for the rollback under way with this error.
   */
  stopped: z.object({ Error: z.string(), Cause: z.string().optional() }).optional(),
});
export type RollbackRunRequest = z.infer<typeof RollbackRunRequestSchema>;

export const RollbackRunResultSchema = z.object({
  status: z.enum(['done', 'ran', 'failed', 'interrupted']),
  stepId: IdSchema.optional(),
  /** The tool's result (truncated), for the rollback's contract. */
  output: z.record(z.string(), z.unknown()).optional(),
});
export type RollbackRunResult = z.infer<typeof RollbackRunResultSchema>;

/**
 * Input of the contract checker's rollback mode: runs the procedure's contract against the
 * tool's output and writes ROLLBACK_COMPLETED (with the evidence) or ROLLBACK_FAILED. A
 * procedure without a contract is verified by its tool having succeeded (evidence `none`).
 * Made again after it recorded its verdict (an interrupted attempt retried), it answers that
 * verdict. With `interrupted`, the procedure's last attempt was cut short and did not report:
 * a passing contract proves the undo (ROLLBACK_COMPLETED), anything else answers `rerun`.
 */
export const RollbackCheckRequestSchema = z.object({
  kind: z.literal('rollback'),
  ...ExecutionScope,
  stepId: IdSchema,
  description: z.string(),
  contract: ContractSchema.optional(),
  output: z.record(z.string(), z.unknown()).default({}),
  context: PlanContextSchema.optional(),
  secrets: SecretDeclarationsSchema.default([]),
  rehearsal: z.boolean(),
  interrupted: z.boolean().default(false),
});
export type RollbackCheckRequest = z.infer<typeof RollbackCheckRequestSchema>;

export const RollbackCheckResultSchema = z.object({
  status: z.enum(['completed', 'failed', 'rerun']),
  /** With `rerun`: the seq of the interrupted attempt's ROLLBACK_STARTED (the runner's `rerunAfter`). */
  startedSeq: z.number().int().optional(),
});
export type RollbackCheckResult = z.infer<typeof RollbackCheckResultSchema>;
