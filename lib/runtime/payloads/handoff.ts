/**
 * An agent step on a worker: the handoff its activity Task queues (lib/compiler/step-task.ts
 * builds it), what the journal keeps of it when the step starts (so seed 003's `handoff.md` is
 * rendered from the journal exactly as the worker rendered it for the agent), and what the worker
 * reports of the agent's run (its command and output, bounded and redacted; the files it changed;
 * its summary, blockers and deviations).
 */
import { z } from 'zod';
import { ContractSchema, IdSchema, NetworkAccessSchema, OutputShapesSchema } from '../../plan/schema.ts';
import { NetworkRecordSchema } from '../sandbox/plan-process-call.ts';
import { RemainingBudgetSchema } from './budget.ts';
import { CallValueSchema } from './call.ts';
import { ErrorOutputSchema, PlanIdentitySchema } from './shared.ts';

/**
 * The evidence of a contract a worker ran in its workspace (lib/runtime/contracts Evidence):
 * the checker records it instead of running the contract itself.
 */
export const WorkerEvidenceSchema = z.looseObject({
  kind: z.enum(['command', 'http', 'assert', 'lambda', 'none']),
  ran: z.string(),
  passed: z.boolean(),
  summary: z.string(),
  excerpt: z.string(),
  durationMs: z.number().nonnegative(),
  checkedAt: z.string(),
  exitCode: z.number().int().nullable().optional(),
  reason: z.string().optional(),
  stderr: z.string().optional(),
  timedOut: z.boolean().optional(),
  /** A command contract's run-time values (contracts.ts `ContractEvidence.values`). */
  values: z.array(CallValueSchema).optional(),
});

/** Why the previous attempt failed (seed 004 §7: the retry's prompt is augmented with it). */
export const PreviousFailureSchema = z.object({
  error: ErrorOutputSchema.optional(),
  evidence: WorkerEvidenceSchema.optional(),
});
export type PreviousFailure = z.infer<typeof PreviousFailureSchema>;

/** Captured outputs of the steps a step reads, by step id. */
export const HandoffInputsSchema = z.record(
  z.string(),
  z.record(z.string(), z.unknown()).nullable().optional(),
);

export const HandoffSchema = z.object({
  plan: PlanIdentitySchema,
  executionId: z.string().min(1),
  stepId: IdSchema,
  index: z.number().int().min(1),
  total: z.number().int().min(1),
  description: z.string(),
  target: z.string().min(1),
  task: z.string().optional(),
  subscriptions: z.array(z.string()).default([]),
  /** The step's args, references resolved (no secrets: those are refused before dispatch). */
  args: z.record(z.string(), z.unknown()).default({}),
  inputs: HandoffInputsSchema.default({}),
  outputs: z.array(IdSchema).default([]),
  /** The step's `outputShapes`: the worker refuses outputs that do not fit, before its contract reads them. */
  outputShapes: OutputShapesSchema.optional(),
  attempt: z.number().int().min(1),
  /** The contract from the approved definition: the only one the worker runs. */
  contract: ContractSchema.optional(),
  /** Why the previous attempt failed, on a retry. */
  previousFailure: PreviousFailureSchema.nullable().default(null),
  timeoutSeconds: z.number().int().positive(),
  heartbeatSeconds: z.number().int().positive(),
  /** What was left of the plan's budget when the step started, and its command limit. */
  budget: RemainingBudgetSchema.default({}),
  /** Seed 003's fallback behaviours: what happens when the work fails or runs out (from the plan). */
  fallbacks: z.array(z.string()).default([]),
  /** The hosts the step declares (`network`): the agent and its contract reach them through the worker's proxy. */
  network: NetworkAccessSchema.optional(),
});
export type Handoff = z.infer<typeof HandoffSchema>;

/**
 * What TASK_STARTED keeps of the handoff a step's doer gets, besides what the plan says: the task
 * text with its references resolved, the values it reads, the budget left and why the last
 * attempt failed (an agent's), as they were when the step started.
 */
export const HandoffStartSchema = z.object({
  task: z.string().optional(),
  inputs: HandoffInputsSchema,
  budget: RemainingBudgetSchema.optional(),
  previousFailure: PreviousFailureSchema.optional(),
});
export type HandoffStart = z.infer<typeof HandoffStartSchema>;

/** Bytes kept of an agent's stdout and of its stderr (the end), and of its work log. */
export const AGENT_OUTPUT_TAIL_BYTES = 2048;
export const AGENT_LOG_TAIL_BYTES = 8192;
/** Entries kept of each list of an agent's report, and characters of each. */
export const AGENT_REPORT_ENTRIES = 20;
export const AGENT_REPORT_CHARACTERS = 500;

/**
 * What a worker reports of one attempt's agent (with its result, or in its failure's cause):
 * bounded and redacted before it leaves the worker, journaled with the attempt's outcome.
 */
export const AgentRunSchema = z.object({
  /** The agent command, as the worker ran it. */
  command: z.string(),
  exitCode: z.number().int().nullable(),
  signal: z.string().optional(),
  durationMs: z.number().nonnegative(),
  /** The end of its output streams. */
  stdout: z.string(),
  stderr: z.string(),
  /** The end of what it appended to `$PLANGATE_LOG`: each command it ran and its output. */
  log: z.string().optional(),
  /**
   * The files the attempt changed in the workspace, from git (status before and after, and the
   * commits it made); absent when the workspace is not a git repository.
   */
  filesModified: z.array(z.string()).optional(),
  /** From its report (`$PLANGATE_REPORT`): `summary:`, `blocker:` and `deviation:` lines. */
  summary: z.string().optional(),
  blockers: z.array(z.string()).default([]),
  deviations: z.array(z.string()).default([]),
  /** Whether the agent ran in the sandbox (lib/runtime/sandbox); absent from workers before it. */
  sandboxed: z.boolean().optional(),
  /** Its stderr lines saying a write outside the workspace was refused (read-only file system). */
  refusedWrites: z.array(z.string()).optional(),
  /** What it asked of the network proxy (a step that declares `network`), refused or not. */
  network: z.array(NetworkRecordSchema).optional(),
});
export type AgentRun = z.infer<typeof AgentRunSchema>;
