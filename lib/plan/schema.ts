/**
 * The plan, as zod schemas: the single source of plangate's plan types.
 * Every authoring format (JSON, YAML, Markdown) parses into `Plan`.
 */
import { z } from 'zod';

/** Step, postcondition and output ids: safe in ASL state names, event keys and file names. */
export const IdSchema = z
  .string()
  .regex(
    /^[A-Za-z][A-Za-z0-9_-]{0,63}$/,
    'must start with a letter and use only letters, digits, "_" or "-" (max 64)',
  );

/** The failure classes of seed 000, plus `unknown` (anything no rule matched). */
export const FAILURE_CLASSES = [
  'transient',
  'permission',
  'invalid_input',
  'logic',
  'unrecoverable',
  'unknown',
] as const;
export const FailureClassSchema = z.enum(FAILURE_CLASSES);
export type FailureClass = z.infer<typeof FailureClassSchema>;

/** Runs a shell command in its own process; passes when the exit code (and stdout, if given) match. */
export const CommandContractSchema = z.strictObject({
  kind: z.literal('command'),
  command: z.string().min(1),
  expectExitCode: z.number().int().min(0).max(255).default(0),
  /** A regular expression stdout must match. */
  stdoutMatches: z.string().optional(),
  cwd: z.string().optional(),
  timeoutSeconds: z.number().int().positive().max(3600).default(60),
});

/** Sends an HTTP request; passes when the status (and body, if given) match. */
export const HttpContractSchema = z.strictObject({
  kind: z.literal('http'),
  method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']).default('GET'),
  url: z.string().min(1),
  headers: z.record(z.string(), z.string()).default({}),
  body: z.string().optional(),
  expectStatus: z.number().int().min(100).max(599).default(200),
  /** A regular expression the response body must match. */
  bodyMatches: z.string().optional(),
  timeoutSeconds: z.number().int().positive().max(3600).default(30),
});

/** A JSONata expression over `{ output, context, steps }` that must evaluate to `true`. */
export const AssertContractSchema = z.strictObject({
  kind: z.literal('assert'),
  expression: z.string().min(1),
});

/** A custom checker function; it receives the step and its output and returns `{ passed, evidence }`. */
export const LambdaContractSchema = z.strictObject({
  kind: z.literal('lambda'),
  functionName: z.string().min(1),
  payload: z.record(z.string(), z.unknown()).default({}),
  timeoutSeconds: z.number().int().positive().max(900).default(60),
});

export const ContractSchema = z.discriminatedUnion('kind', [
  CommandContractSchema,
  HttpContractSchema,
  AssertContractSchema,
  LambdaContractSchema,
]);
export type Contract = z.infer<typeof ContractSchema>;

/** How a failure is recognised as belonging to a class. Any matching rule matches. */
export const DetectionSchema = z.strictObject({
  errorNames: z.array(z.string()).default([]),
  /** Regular expressions tested case-insensitively against the error message. */
  messagePatterns: z.array(z.string()).default([]),
  httpStatuses: z.array(z.number().int().min(100).max(599)).default([]),
  exitCodes: z.array(z.number().int().min(0).max(255)).default([]),
});

/** What happens when retries are exhausted: ask a person (retry / skip / abort), or decide now. */
export const EscalationSchema = z.enum(['ask', 'skip', 'abort']);

export const RecoveryRecipeSchema = z.strictObject({
  detect: DetectionSchema.default({ errorNames: [], messagePatterns: [], httpStatuses: [], exitCodes: [] }),
  /** Retries after the first attempt (0 = no retry). */
  maxAttempts: z.number().int().min(0).max(10).default(0),
  intervalSeconds: z.number().int().min(0).max(86_400).default(1),
  backoffRate: z.number().min(1).max(100).default(2),
  maxDelaySeconds: z.number().int().positive().max(86_400).optional(),
  escalation: EscalationSchema.default('ask'),
});
export type RecoveryRecipe = z.infer<typeof RecoveryRecipeSchema>;

/** Per-class overrides; classes left out keep seed 000's defaults (see lib/plan/recovery.ts). */
export const RecoverySchema = z.partialRecord(FailureClassSchema, RecoveryRecipeSchema).default({});

/** A step's own failure policy (seed 004's `on_fail: retry(N), then escalate|abort`). */
export const OnFailSchema = z.strictObject({
  retries: z.number().int().min(0).max(10).default(0),
  /** What happens after the last retry failed. */
  escalation: EscalationSchema.default('ask'),
});

/**
 * How to undo a completed step when the run is aborted (seed 003). Runs in reverse completion
 * order; its own contract proves the undo worked. Args may reference the step's own outputs.
 */
export const RollbackSchema = z.strictObject({
  tool: z.string().min(1),
  args: z.record(z.string(), z.unknown()).default({}),
  contract: ContractSchema.optional(),
});

/**
 * What a step's output must look like for later steps to use it: a regular expression the whole
 * value must match (strings only), a JSON Schema (2020-12) the value must satisfy, or both. A
 * value that does not fit fails the step that produced it (OutputShapeMismatch), before anything
 * reads it. Checked by lib/plan/output-shapes.ts.
 */
export const OutputShapeSchema = z.strictObject({
  matches: z.string().min(1).optional(),
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]).optional(),
});
export type OutputShape = z.infer<typeof OutputShapeSchema>;

/** Shapes by output name; every name must be one of the step's `outputs`. */
export const OutputShapesSchema = z.record(z.string(), OutputShapeSchema);
export type OutputShapes = z.infer<typeof OutputShapesSchema>;

/** One grant a step asks for: IAM actions (`service:Action`, wildcards allowed) on resources (ARNs or `*`). */
export const AwsGrantSchema = z.strictObject({
  actions: z
    .array(
      z
        .string()
        .regex(
          /^(\*|[a-z0-9*?-]+:[A-Za-z0-9*?]+)$/,
          'an IAM action is `service:Action`, e.g. s3:GetObject (wildcards * and ? allowed)',
        ),
    )
    .min(1),
  resources: z
    .array(
      z
        .string()
        .regex(
          /^(\*|arn:[^\s]+)$/,
          'a resource is an ARN (arn:aws:s3:::bucket/key, wildcards * and ? allowed) or *',
        ),
    )
    .min(1),
});
export type AwsGrant = z.infer<typeof AwsGrantSchema>;

/**
 * What AWS a step's processes (its tool, contract and rollback; not the rollback's contract) may
 * use, on AWS: the plan AWS role, assumed for the run with exactly these grants as the session policy (never more than the
 * role itself allows; never the harness's tables, bus, functions or secrets). A step without it
 * gets no AWS credentials at all.
 */
export const AwsAccessSchema = z.strictObject({
  allow: z.array(AwsGrantSchema).min(1).max(10),
});
export type AwsAccess = z.infer<typeof AwsAccessSchema>;

/**
 * The hosts a step's processes (its tool, contract and rollback) may reach, through the harness's
 * proxy (lib/plan/network.ts says how a host is written and matched). A step without it has no
 * network at all.
 */
export const NetworkAccessSchema = z.strictObject({
  hosts: z.array(z.string().min(1).max(260)).min(1).max(50),
});
export type NetworkAccess = z.infer<typeof NetworkAccessSchema>;

export const StepSchema = z.strictObject({
  id: IdSchema,
  /** Short imperative title, e.g. "Build the image". */
  description: z.string().min(1).max(500),
  /** The tool the step runner calls (see lib/plan/tools.ts). Omitted when `target` names an agent. */
  tool: z.string().min(1).optional(),
  args: z.record(z.string(), z.unknown()).default({}),
  /** Seed 004: the agent role the task is dispatched to (runs the `agent` tool). */
  target: z.string().min(1).optional(),
  /** Seed 004: the task text given to the agent. */
  task: z.string().optional(),
  /** Seed 004: context bindings such as `file:src/app.py` or `topic:fix-auth`. */
  subscriptions: z.array(z.string()).default([]),
  dependsOn: z.array(IdSchema).default([]),
  /** Proves the step done; only the harness runs it. */
  contract: ContractSchema.optional(),
  /** Destructive steps get their own approval gate right before they run. */
  requiresApproval: z.boolean().default(false),
  /** When false, a failure lets independent branches go on. */
  critical: z.boolean().default(true),
  timeoutSeconds: z.number().int().positive().max(31_536_000).default(900),
  onFail: OnFailSchema.optional(),
  /** Names of values this step captures; later steps reference them as `${steps.<id>.<name>}`. */
  outputs: z.array(IdSchema).default([]),
  /** Optional shapes of some of `outputs` (absent, not `{}`, when none: plans without shapes keep their digest). */
  outputShapes: OutputShapesSchema.optional(),
  /** Seed 003: a person does this step and records the outputs. */
  requiresHuman: z.boolean().default(false),
  rollback: RollbackSchema.optional(),
  /** AWS access of the step's processes (absent: none; plans without it keep their digest). */
  aws: AwsAccessSchema.optional(),
  /** Hosts the step's processes may reach (absent: no network; plans without it keep their digest). */
  network: NetworkAccessSchema.optional(),
});
export type Step = z.infer<typeof StepSchema>;

export const PostconditionSchema = z.strictObject({
  id: IdSchema,
  description: z.string().min(1).max(500),
  contract: ContractSchema,
});
export type Postcondition = z.infer<typeof PostconditionSchema>;

/** Who a gate is escalated to when nobody answered in time: the next rung of the timeout ladder. */
export const ApproverGroupSchema = z.strictObject({
  approvers: z.array(z.string().min(1)).min(1),
  /** How many distinct approvals of this group the gate needs. */
  quorum: z.number().int().min(1).max(20).default(1),
});
export type ApproverGroup = z.infer<typeof ApproverGroupSchema>;

export const ApprovalPolicySchema = z.strictObject({
  /** Who may approve (email addresses, Slack ids or user names); empty means any authenticated user. */
  approvers: z.array(z.string().min(1)).default([]),
  /** How many distinct approvals the plan gate needs. */
  quorum: z.number().int().min(1).max(20).default(1),
  /** Who may never approve, e.g. the plan's author. */
  forbiddenApprovers: z.array(z.string().min(1)).default([]),
  /** How long a gate waits for a decision from each group (the approvers, then each of `escalateTo`). */
  timeoutSeconds: z.number().int().positive().max(31_536_000).default(86_400),
  /** When set, each group is reminded once after this long without a decision (less than `timeoutSeconds`). */
  remindAfterSeconds: z.number().int().positive().max(31_536_000).optional(),
  /**
   * The timeout ladder: when a group lets a gate time out, it is asked of the next group; after
   * the last, the gate rejects with reason `timed out` (it never approves by itself).
   */
  escalateTo: z.array(ApproverGroupSchema).max(5).optional(),
  /** Whether `--approve` may answer the gate non-interactively (it is still logged as an approval). */
  allowAutoApprove: z.boolean().default(true),
});

export const BudgetSchema = z.strictObject({
  wallClockSeconds: z.number().int().positive().optional(),
  costUsd: z.number().nonnegative().optional(),
  tokens: z.number().int().positive().optional(),
  /** Seed 003's command limit per task: it reaches the agent through its handoff. */
  maxCommands: z.number().int().positive().optional(),
});

/** A secret is referenced by name and resolved only when a tool runs; its value never enters the plan. */
export const SecretRefSchema = z.strictObject({
  name: IdSchema,
  source: z.enum(['env', 'secretsmanager']),
  /** Environment variable name, or Secrets Manager secret id. */
  ref: z.string().min(1),
});

/** How many steps a plan may have (seed 000: 3–7); a plan may declare its own, e.g. a generated migration. */
export const SizePolicySchema = z.strictObject({
  minSteps: z.number().int().min(1).optional(),
  maxSteps: z.number().int().min(1).optional(),
});

export const PlanSchema = z.strictObject({
  id: IdSchema,
  version: z.number().int().min(1).default(1),
  objective: z.string().min(1).max(2000),
  /** Free-form facts for the steps (seed 004's **Context:**); args may reference `${context.<key>}`. */
  context: z.record(z.string(), z.unknown()).default({}),
  /** Seed 004 frontmatter. */
  status: z.enum(['draft', 'verified', 'approved', 'in-progress', 'done', 'failed']).default('draft'),
  owner: z.string().optional(),
  steps: z.array(StepSchema).min(1),
  postconditions: z.array(PostconditionSchema).default([]),
  recovery: RecoverySchema,
  approval: ApprovalPolicySchema.default({
    approvers: [],
    quorum: 1,
    forbiddenApprovers: [],
    timeoutSeconds: 86_400,
    allowAutoApprove: true,
  }),
  budget: BudgetSchema.default({}),
  secrets: z.array(SecretRefSchema).default([]),
  /** Overrides the validator's step-count policy for this plan. */
  sizePolicy: SizePolicySchema.optional(),
});
export type Plan = z.infer<typeof PlanSchema>;
/** A plan as written, before defaults are applied. */
export type PlanInput = z.input<typeof PlanSchema>;

/**
 * References inside step args: `${steps.<stepId>.<output>}`, `${context.<key>}` and `${secrets.<name>}`.
 * Resolved by the step runner at call time; secrets are never written back anywhere.
 */
export const REFERENCE_PATTERN =
  /\$\{(steps|context|secrets)\.([A-Za-z][A-Za-z0-9_-]*)(?:\.([A-Za-z][A-Za-z0-9_-]*))?\}/g;
