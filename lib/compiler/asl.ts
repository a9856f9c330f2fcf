/** The ASL shapes the building blocks produce (JSONata query language). */
import type { StateMachineHandlerName } from '../runtime/catalog.ts';
import type { MachinePlaceholder } from './placeholders.ts';

/** One state, as it appears under `States` (rendered by the builders in states/). */
export type AslState = Record<string, unknown>;

export type AslStates = Record<string, AslState>;

/** One ASL retrier. */
export interface AslRetrier {
  readonly ErrorEquals: string[];
  /** @default 1 */
  readonly IntervalSeconds?: number;
  /** @default 3 */
  readonly MaxAttempts?: number;
  /** @default 2 */
  readonly BackoffRate?: number;
  readonly MaxDelaySeconds?: number;
  /** @default 'NONE' */
  readonly JitterStrategy?: 'FULL' | 'NONE';
}

/** One ASL catcher. */
export interface AslCatcher {
  readonly ErrorEquals: readonly string[];
  readonly Output?: unknown;
  readonly Next: string;
}

/** A complete definition (top level or a Parallel branch). */
export interface AslDefinition {
  readonly Comment?: string;
  readonly QueryLanguage?: 'JSONata';
  readonly StartAt: string;
  readonly States: AslStates;
  readonly TimeoutSeconds?: number;
}

export const LAMBDA_INVOKE = 'arn:aws:states:::lambda:invoke';
export const LAMBDA_INVOKE_WAIT = 'arn:aws:states:::lambda:invoke.waitForTaskToken';
export const START_EXECUTION_SYNC = 'arn:aws:states:::states:startExecution.sync:2';

/** Lambda service errors AWS recommends retrying on every lambda:invoke task. */
export const LAMBDA_SERVICE_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
];

/**
 * Retry for the harness's own bookkeeping calls (classifier, join, finalize): every 1 s, backoff
 * ×2 (ASL's defaults, left out of the definition), up to 6 times, with full jitter.
 */
export const SERVICE_RETRY: AslRetrier = {
  ErrorEquals: LAMBDA_SERVICE_ERRORS,
  MaxAttempts: 6,
  JitterStrategy: 'FULL',
};

/**
 * What an attempt under way when the engine stopped (kill -9 of `plangate run`) fails with on
 * resume (lib/engine's INTERRUPTED): whether the call completed is unknown. In a retrier it
 * matches every error but States.Timeout, so only calls that are safe to make again retry it.
 */
export const INTERRUPTED_ERROR = 'States.TaskFailed';

/**
 * Retry of an interrupted Finalize, which answers what it recorded when made again: every 1 s,
 * backoff ×2 (ASL's defaults), up to 6 times, with full jitter.
 */
export const INTERRUPTED_RETRY: AslRetrier = {
  ErrorEquals: [INTERRUPTED_ERROR],
  MaxAttempts: 6,
  JitterStrategy: 'FULL',
};

/**
 * What a `states:startExecution.sync:2` task fails with when Step Functions refuses to start the
 * child: the optimized integration names a StartExecution error `StepFunctions.<exception>`, the
 * modeled exception's name (`ExecutionLimitExceeded`, the open-executions quota →
 * `ExecutionLimitExceededException`) or the SDK's service exception for errors the API does not
 * model (`ThrottlingException`, the StartExecution token bucket → `AWSStepFunctionsException`),
 * as Lambda's are `Lambda.<exception>` / `Lambda.AWSLambdaException`.
 * - https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html (ExecutionLimitExceeded)
 * - https://docs.aws.amazon.com/step-functions/latest/apireference/CommonErrors.html (ThrottlingException)
 * - https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html (StartExecution throttling, open executions)
 * - https://docs.aws.amazon.com/step-functions/latest/dg/connect-stepfunctions.html (the optimized integration)
 * - https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html (`<Service>.<Exception>` names)
 * No AWS page lists these two names and neither was observed on AWS (docs/compiler.md, Known limits).
 * A child that ran and failed arrives as `States.TaskFailed` instead, which is the step's own
 * failure and is never retried here. `StepFunctions.SdkClientException` (no answer from the
 * service) is left out: the child may have started, and a retry would run the step twice.
 */
export const START_EXECUTION_REFUSED_ERRORS = [
  'StepFunctions.AWSStepFunctionsException',
  'StepFunctions.ExecutionLimitExceededException',
];

/**
 * Retry for a child machine that Step Functions refused to start (a big fan-out meets the
 * StartExecution quota): every 1 s, backoff ×2 (ASL's defaults, left out), up to 6 times, full jitter.
 */
export const START_EXECUTION_RETRY: AslRetrier = {
  ErrorEquals: START_EXECUTION_REFUSED_ERRORS,
  MaxAttempts: 6,
  JitterStrategy: 'FULL',
};

/** What a definition uses that deployment provides: each is named in the ASL by its `${…}` placeholder. */
export type ResourceReference =
  /** A harness Lambda of the catalog (lib/runtime/catalog.ts). */
  | { readonly kind: 'lambda'; readonly handler: StateMachineHandlerName; readonly placeholder: string }
  /** A child state machine of the same plan: a part, or a step machine (its definition's `arnSubstitution`). */
  | { readonly kind: 'stateMachine'; readonly placeholder: MachinePlaceholder }
  /** The activity an agent target's workers poll. */
  | { readonly kind: 'activity'; readonly target: string; readonly placeholder: string };

/** One compiled state machine: its name, its definition, and the JSON deployed. */
export interface CompiledDefinition {
  readonly name: string;
  readonly asl: AslDefinition;
  /** The definition as deployed (compact JSON). */
  readonly json: string;
  /**
   * Everything the definition uses that deployment provides, each once, in the order the ASL
   * first names it: what to substitute and grant, without reading the definition's text.
   */
  readonly resources: readonly ResourceReference[];
  /** For a child machine: the substitution its parent uses for its ARN. */
  readonly arnSubstitution?: string;
}
