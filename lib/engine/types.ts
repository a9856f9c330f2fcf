/**
 * Contracts between the parts of plangate's embedded Step Functions engine:
 * the interpreter (lib/engine/core), the service integrations and mocks
 * (lib/engine/resources), the data-flow functions (lib/engine/dataflow) and
 * the Step Functions API server (lib/engine/api).
 *
 * The engine's public surface is the Step Functions API itself: `StepFunctionsEngine`
 * takes and returns the request/response shapes of @aws-sdk/client-sfn, so the
 * HTTP server is a thin AWS JSON 1.0 dispatcher over it.
 */

/** An error the API returns with AWS's code and shape, e.g. `ExecutionDoesNotExist`. */
export class SfnServiceError extends Error {
  constructor(
    /** AWS's error code, e.g. `InvalidDefinition`, `StateMachineDoesNotExist`, `TaskDoesNotExist`. */
    readonly code: string,
    message: string,
    /** HTTP status the API server answers with. */
    readonly httpStatus = 400,
  ) {
    super(message);
    this.name = code;
  }
}

/** A plain JSON object (not an array, not null): what definitions and state payloads are made of. */
export type JsonObject = Record<string, unknown>;

/** Whether a value is a {@link JsonObject}. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The query languages a state machine, a states block or a state may declare (`QueryLanguage`). */
export type QueryLanguage = 'JSONPath' | 'JSONata';

/** A located problem in an ASL definition, e.g. `/States/Build/Next: state "Biuld" does not exist`. */
export interface DefinitionProblem {
  /** JSON pointer into the definition, e.g. `/States/Build/Retry/0/ErrorEquals`. */
  readonly location: string;
  readonly code: string;
  readonly message: string;
}

/** A failure raised while running a state, carried as Step Functions' `{ Error, Cause }`. */
export class StatesError extends Error {
  constructor(
    readonly error: string,
    override readonly cause: string | undefined,
  ) {
    super(cause ? `${error}: ${cause}` : error);
    this.name = error;
  }
}

/** What a Task state hands to a service integration. */
export interface TaskInvocation {
  /** The state's Resource, e.g. `arn:aws:states:::lambda:invoke.waitForTaskToken`. */
  readonly resource: string;
  /** The evaluated Parameters/Arguments (the effective input of the task). */
  readonly parameters: unknown;
  readonly stateName: string;
  readonly executionArn: string;
  readonly stateMachineArn: string;
  /** Present for `.waitForTaskToken` tasks (already substituted where the definition placed `$$.Task.Token`). */
  readonly taskToken?: string;
  readonly timeoutSeconds?: number;
  /** Aborted when the execution stops, the task times out, or a sibling Parallel branch fails. */
  readonly signal: AbortSignal;
  /**
   * The engine's memo of payload texts: an integration that serializes the parameters takes their
   * text from it (the engine has usually just written it into the history), and one that parses
   * its result from a text hands that text back. Absent: nothing to share.
   */
  readonly payloadTexts?: PayloadTextMemo;
}

/** The engine's memo of the text of the payload it serialized last (see core/json-text.ts). */
export interface PayloadTextMemo {
  /** `JSON.stringify(value)`, from the memo when `value` is the object serialized last. */
  of(value: unknown): string;
  /** Records the text `value` was just parsed from. */
  remember(value: unknown, text: string): void;
}

/**
 * A service integration: returns the task result (for `.waitForTaskToken`, resolves once the
 * request has been dispatched; the engine then waits for SendTaskSuccess/Failure).
 * Throws `StatesError` for task failures (e.g. `Lambda.ServiceException`, `States.TaskFailed`).
 */
export type ResourceInvoker = (invocation: TaskInvocation) => Promise<unknown>;

/** A Lambda handler run in-process, as AWS Lambda would call it. */
export type LambdaHandler = (event: unknown, context: LambdaLikeContext) => Promise<unknown>;

export interface LambdaLikeContext {
  readonly functionName: string;
  readonly functionVersion: string;
  readonly invokedFunctionArn: string;
  readonly memoryLimitInMB: string;
  readonly awsRequestId: string;
  readonly logGroupName: string;
  readonly logStreamName: string;
  getRemainingTimeInMillis(): number;
  readonly callbackWaitsForEmptyEventLoop: boolean;
}

export type { OperationOptions, StepFunctionsEngine } from './operations.ts';
