/**
 * The catalog of harness Lambdas: each handler once, with its module in lambdas/, the compiler
 * placeholder naming its ARN in compiled definitions, its memory and timeout, and the zod schema
 * of the environment it reads. Everything else derives from this list: the CDK functions and the
 * environment CDK sets (lib/cdk), the compiler's placeholders (lib/compiler/placeholders.ts), the
 * handlers the local stack runs in process (lib/serve/local-stack.ts), and each Lambda's
 * parse of its environment at cold start (lambdas/aws-handler.ts).
 */
import { z } from 'zod';
import { FUNCTION_TIMEOUT_SECONDS } from '../plan/function-limits.ts';
import { NotConfiguredError } from './shared/errors.ts';

/** The environment variable carrying each table's physical name (lib/runtime/journal/tables.ts). */
export const TABLE_NAME_ENV = {
  events: 'PLANGATE_EVENTS_TABLE',
  gates: 'PLANGATE_GATES_TABLE',
  joins: 'PLANGATE_JOINS_TABLE',
  outputs: 'PLANGATE_OUTPUTS_TABLE',
  drafts: 'PLANGATE_DRAFTS_TABLE',
  versions: 'PLANGATE_VERSIONS_TABLE',
  plans: 'PLANGATE_PLANS_TABLE',
} as const;

/** The environment variable naming the policy directory of a Lambda (relative to its code) or a process. */
export const POLICY_DIR_ENV = 'PLANGATE_POLICY_DIR';

const set = z.string().min(1);
const LOG_LEVELS = /^(trace|debug|info|warn|error|critical|silent)$/i;

/** Powertools' settings, which every Lambda reads (the plan-process function too). */
const TelemetryEnv = z.object({
  /** The `service` of every log entry and metric (the platform's name prefix). */
  POWERTOOLS_SERVICE_NAME: set,
  /** The CloudWatch namespace of the harness metrics. */
  POWERTOOLS_METRICS_NAMESPACE: set,
  /** @default INFO */
  POWERTOOLS_LOG_LEVEL: z
    .string()
    .regex(LOG_LEVELS, 'a Powertools log level (DEBUG, INFO, WARN, …)')
    .optional(),
  /** Read by Node itself (source maps in stack traces). */
  NODE_OPTIONS: z.string().optional(),
});

/** What every harness Lambda reads: the journal's tables and bus, and Powertools' settings. */
const HarnessEnv = z.object({
  [TABLE_NAME_ENV.events]: set,
  [TABLE_NAME_ENV.gates]: set,
  [TABLE_NAME_ENV.joins]: set,
  [TABLE_NAME_ENV.outputs]: set,
  [TABLE_NAME_ENV.drafts]: set,
  [TABLE_NAME_ENV.versions]: set,
  [TABLE_NAME_ENV.plans]: set,
  PLANGATE_EVENT_BUS: set,
  ...TelemetryEnv.shape,
  /** The platform's Cedar policies in the bundle; unset: the shipped set. */
  [POLICY_DIR_ENV]: z.string().optional(),
});

/** The approval-id HMAC key: the Secrets Manager secret (AWS), or the key itself (local mode). */
const SigningKeyEnv = z.object({
  PLANGATE_APPROVAL_SIGNING_KEY_SECRET: set.optional(),
  PLANGATE_APPROVAL_SIGNING_KEY: set.optional(),
});

/** The Slack app's bot token: the secret's ARN (AWS) or the token (local mode); the API's URL for tests. */
const SlackBotTokenEnv = z.object({
  PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: set.optional(),
  PLANGATE_SLACK_BOT_TOKEN: set.optional(),
  PLANGATE_SLACK_API_URL: z.url().optional(),
});

/** Who the API handlers take the caller to be: `header` (local mode only) trusts x-plangate-user. */
const IdentityEnv = z.object({ PLANGATE_IDENTITY: z.literal('header').optional() });

/** How plans are launched at run time (the Plans API and the planner). */
const LaunchEnv = z.object({
  PLANGATE_RUNTIME_PLAN_ROLE_ARN: set,
  /** JSON object: placeholder name → harness function ARN. */
  PLANGATE_SUBSTITUTIONS: set,
  /** Prefix of run-time plans' state machine names. */
  PLANGATE_NAME_PREFIX: set,
  PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN: set.optional(),
});

/** Process tools and command contracts: their working directory (Lambda: /tmp, the only writable one). */
const ToolsEnv = z.object({ PLANGATE_WORKDIR: set.optional() });

/** Cross-variable checks run even when single variables failed, so one error names every problem. */
const ALWAYS = { when: () => true };

/** Requires one of `keys` (an AWS secret ARN, or its local-mode value). */
const oneOf =
  (...keys: string[]) =>
  (env: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    if (keys.some((key) => env[key] !== undefined)) return;
    ctx.addIssue({ code: 'custom', path: [keys[0] as string], message: `set ${keys.join(' or ')}` });
  };

/** Requires all of `keys` or none of them. */
const together =
  (...keys: string[]) =>
  (env: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const missing = keys.filter((key) => env[key] === undefined);
    if (missing.length === 0 || missing.length === keys.length) return;
    ctx.addIssue({
      code: 'custom',
      path: [missing[0] as string],
      message: `${keys.join(', ')} go together: ${missing.join(', ')} missing`,
    });
  };

const GateEnv = HarnessEnv.extend(SigningKeyEnv.shape)
  .extend(SlackBotTokenEnv.shape)
  .extend({
    /** The function the gate invokes (asynchronously) to send an approval request. */
    PLANGATE_NOTIFIER_FUNCTION: set,
    /** Where plan code runs (named on every gate as its "Runs as"); the gate never invokes it. */
    PLANGATE_PLAN_PROCESS_FUNCTION: set.optional(),
  })
  .superRefine(oneOf('PLANGATE_APPROVAL_SIGNING_KEY_SECRET', 'PLANGATE_APPROVAL_SIGNING_KEY'), ALWAYS);

/**
 * The step runner and the contract checker: where plan processes run on AWS (the plan-process
 * function; unset, they run in the harness Lambda itself, as locally) and the plan AWS role they
 * assume, with the step's session policy, for the processes of a step that declares AWS.
 */
const StepEnv = HarnessEnv.extend(ToolsEnv.shape).extend({
  PLANGATE_PLAN_PROCESS_FUNCTION: set.optional(),
  PLANGATE_PLAN_AWS_ROLE_ARN: set.optional(),
});

/**
 * The plan-process function reads none of the harness's settings (no table, bus, function or
 * role): only where calls run. A call's AWS credentials come in its event.
 */
const PlanProcessEnv = TelemetryEnv.extend(ToolsEnv.shape).extend({
  /** Where the workspace file system is mounted: each run's commands run in its directory there. */
  PLANGATE_WORKSPACE_ROOT: set.optional(),
});

const NotifierEnv = HarnessEnv.extend(SigningKeyEnv.shape)
  .extend(SlackBotTokenEnv.shape)
  .extend({
    /** Base URL of the approval links. */
    PLANGATE_API_URL: z.url(),
    /** The verified address approval emails are sent from; without it, no email. */
    PLANGATE_SES_SENDER: set.optional(),
    /** Comma-separated addresses every approval email also goes to. */
    PLANGATE_NOTIFY_EMAILS: set.optional(),
    /** The channel id approval requests are posted to; without it (or a bot token), no Slack. */
    PLANGATE_SLACK_CHANNEL: set.optional(),
  })
  .superRefine((env, ctx) => {
    if (env.PLANGATE_SES_SENDER !== undefined)
      oneOf('PLANGATE_APPROVAL_SIGNING_KEY_SECRET', 'PLANGATE_APPROVAL_SIGNING_KEY')(env, ctx);
  }, ALWAYS);

const PlansApiEnv = HarnessEnv.extend(LaunchEnv.shape).extend(IdentityEnv.shape).extend({
  /** The planner Lambda that drafts plans from goals; without it, goals are refused (501). */
  PLANGATE_PLANNER_FUNCTION: set.optional(),
});

const PlannerEnv = HarnessEnv.extend(LaunchEnv.shape).extend({
  PLANGATE_PLANNER_PROVIDER: z.enum(['bedrock', 'openai']),
  PLANGATE_PLANNER_MODEL: set,
  /** Validator rounds per draft. @default 4 */
  PLANGATE_PLANNER_MAX_ROUNDS: z
    .string()
    .regex(/^[1-9]\d*$/, 'a whole number of rounds')
    .optional(),
  /** An OpenAI-compatible server's base URL. */
  OPENAI_BASE_URL: z.url().optional(),
  /** The secret holding its API key (AWS), or the key itself (local mode). */
  OPENAI_API_KEY_SECRET_ARN: set.optional(),
  OPENAI_API_KEY: set.optional(),
});

const ApprovalsApiEnv = HarnessEnv.extend(SigningKeyEnv.shape)
  .extend(SlackBotTokenEnv.shape)
  .extend(IdentityEnv.shape)
  .extend({
    /** A revision of a gate's content is sent to its approvers again through the notifier. */
    PLANGATE_NOTIFIER_FUNCTION: set.optional(),
    /** The approvers' hosted sign-in (a host or https URL), its public app client, and the API's URL (the callback). */
    PLANGATE_COGNITO_DOMAIN: set.optional(),
    PLANGATE_COGNITO_CLIENT_ID: set.optional(),
    PLANGATE_API_URL: z.url().optional(),
    /** Slack buttons: the app's signing secret (ARN on AWS, the value locally) and who each Slack user answers as. */
    PLANGATE_SLACK_SIGNING_SECRET_SECRET_ARN: set.optional(),
    PLANGATE_SLACK_SIGNING_SECRET: set.optional(),
    /** `<Slack user id>=<approver name>,…` */
    PLANGATE_SLACK_APPROVERS: set.optional(),
  })
  .superRefine(oneOf('PLANGATE_APPROVAL_SIGNING_KEY_SECRET', 'PLANGATE_APPROVAL_SIGNING_KEY'), ALWAYS)
  .superRefine(together('PLANGATE_COGNITO_DOMAIN', 'PLANGATE_COGNITO_CLIENT_ID', 'PLANGATE_API_URL'), ALWAYS);

/** The anchor Lambda: the KMS key it signs the journal's heads with and the Object Lock bucket it writes them to. */
const AnchorEnv = HarnessEnv.extend({
  PLANGATE_ANCHOR_KEY_ARN: set,
  PLANGATE_ANCHOR_BUCKET: set,
});

/** One harness Lambda. */
export interface HarnessHandlerSpec {
  /** The handler module, relative to the repository root (it exports `handler` and `makeHandler(deps)`). */
  readonly entry: `lambdas/${string}.ts`;
  /** What the function does, shown in the console. */
  readonly description: string;
  /** `${...}` placeholder compiled definitions use for this function's ARN; absent for handlers no machine calls. */
  readonly placeholder?: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** Every variable the handler reads; CDK sets exactly these, and the Lambda parses them at cold start. */
  readonly env: z.ZodObject;
  /**
   * Whether the function sends X-Ray traces (active tracing, and the role's X-Ray writes).
   * @default true
   */
  readonly traced?: boolean;
}

export const HARNESS_HANDLERS = {
  gate: {
    entry: 'lambdas/gate.ts',
    description: 'plangate gate: keeps the task token server-side and asks for a decision',
    placeholder: 'GateFunctionArn',
    timeoutSeconds: 30,
    memoryMb: 512,
    env: GateEnv,
  },
  stepRunner: {
    entry: 'lambdas/step-runner.ts',
    description: 'plangate step runner: resolves args and calls the step tool',
    placeholder: 'StepRunnerFunctionArn',
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
    memoryMb: 1024,
    env: StepEnv,
  },
  contractChecker: {
    entry: 'lambdas/contract-checker.ts',
    description: 'plangate contract checker: runs the step contract, records evidence, completes the step',
    placeholder: 'ContractCheckerFunctionArn',
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
    memoryMb: 1024,
    env: StepEnv,
  },
  planProcess: {
    entry: 'lambdas/plan-process.ts',
    description:
      "plangate plan process: runs a plan's command (shell step, contract, rollback) without the harness's authority",
    timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
    memoryMb: 1024,
    env: PlanProcessEnv,
    // Its role holds nothing plan code could use but its own log group: no X-Ray writes either.
    traced: false,
  },
  classifier: {
    entry: 'lambdas/classifier.ts',
    description: 'plangate classifier: classifies a failure and picks the recovery recipe',
    placeholder: 'ClassifierFunctionArn',
    timeoutSeconds: 30,
    memoryMb: 512,
    env: HarnessEnv,
  },
  join: {
    entry: 'lambdas/join.ts',
    description: 'plangate join: releases a step once its predecessors on other branches finished',
    placeholder: 'JoinFunctionArn',
    timeoutSeconds: 30,
    memoryMb: 512,
    env: HarnessEnv,
  },
  notifier: {
    entry: 'lambdas/notifier.ts',
    description: 'plangate notifier: sends approval requests by email (SES) and Slack',
    timeoutSeconds: 30,
    memoryMb: 512,
    env: NotifierEnv,
  },
  plansApi: {
    entry: 'lambdas/plans-api.ts',
    description: 'plangate Plans API: validate, compile, deploy and start plans; report on them',
    timeoutSeconds: 29,
    memoryMb: 1024,
    env: PlansApiEnv,
  },
  planner: {
    entry: 'lambdas/planner.ts',
    description:
      'plangate planner: drafts a plan from a goal with a model, validates it, launches it to its gate',
    timeoutSeconds: 15 * 60,
    memoryMb: 1024,
    env: PlannerEnv,
  },
  approvalsApi: {
    entry: 'lambdas/approvals-api.ts',
    description: 'plangate approvals API: the approval page and the answers to gates',
    timeoutSeconds: 29,
    memoryMb: 512,
    env: ApprovalsApiEnv,
  },
  anchor: {
    entry: 'lambdas/anchor.ts',
    description:
      "plangate anchor: signs the journal's newest heads (KMS) and writes them to the Object Lock bucket",
    timeoutSeconds: 60,
    memoryMb: 256,
    env: AnchorEnv,
  },
} as const satisfies Record<string, HarnessHandlerSpec>;

export type HarnessHandlerName = keyof typeof HARNESS_HANDLERS;

/** The handlers compiled state machines call: the ones with a placeholder. */
export const STATE_MACHINE_HANDLERS = [
  'gate',
  'stepRunner',
  'contractChecker',
  'classifier',
  'join',
] as const satisfies readonly HarnessHandlerName[];
export type StateMachineHandlerName = (typeof STATE_MACHINE_HANDLERS)[number];

/**
 * The handlers that append to the journal: the only roles granted PutItem on the events table on
 * AWS (the join and the anchor never write an event; the notifier writes one only when a notice
 * reached nobody, GATE_NOTICE_UNDELIVERED).
 */
export const JOURNAL_WRITERS = [
  'gate',
  'notifier',
  'stepRunner',
  'contractChecker',
  'classifier',
  'plansApi',
  'planner',
  'approvalsApi',
] as const satisfies readonly HarnessHandlerName[];

/** What every harness Lambda's parsed environment holds. */
export type CommonHandlerEnv = z.output<typeof HarnessEnv>;

/** What may be set of every harness Lambda's common environment (the plan-process function reads only Powertools' part). */
export type CommonHandlerEnvInput = { readonly [K in keyof z.input<typeof HarnessEnv>]?: string };

/** The parsed environment of a handler. */
export type HandlerEnv<N extends HarnessHandlerName> = z.output<(typeof HARNESS_HANDLERS)[N]['env']>;

/** What may be set in a handler's environment: the names its schema lists, as strings. */
export type HandlerEnvInput<N extends HarnessHandlerName> = {
  readonly [K in keyof z.input<(typeof HARNESS_HANDLERS)[N]['env']>]?: string;
};

/**
 * A handler's environment, parsed with its schema (at cold start). Anything missing or malformed
 * is a NotConfigured error naming every variable at fault; variables the schema does not list
 * are left out of the result (plans' `source: env` secrets are read from the process itself).
 */
export function parseHandlerEnv<N extends HarnessHandlerName>(
  name: N,
  env: Readonly<Record<string, string | undefined>>,
): HandlerEnv<N> {
  const parsed = HARNESS_HANDLERS[name].env.safeParse(env);
  if (parsed.success) return parsed.data as HandlerEnv<N>;
  const problems = parsed.error.issues.map((issue) => {
    const variable = String(issue.path[0] ?? '(environment)');
    return env[variable] === undefined && issue.code !== 'custom'
      ? `${variable} is not set`
      : `${variable}: ${issue.message}`;
  });
  throw new NotConfiguredError(`the ${name} Lambda's environment: ${problems.join('; ')}`);
}
