/**
 * Errors the runtime raises. Each carries what the failure classifier looks at
 * (name, message, HTTP status, exit code) so classification never parses prose.
 */

/** What a failure looks like to the classifier, whatever raised it. */
export interface FailureFacts {
  /** e.g. `TimeoutError`, `ThrottlingException`, `ContractFailed`. */
  readonly name: string;
  readonly message: string;
  readonly httpStatus?: number;
  readonly exitCode?: number;
  /** A Node system error code such as `ECONNRESET` or `EACCES`. */
  readonly code?: string;
}

export interface HarnessErrorProps {
  readonly httpStatus?: number;
  readonly exitCode?: number;
  readonly code?: string;
  /** Where in the input the problem is, e.g. `steps[2].args.url`. */
  readonly location?: string;
  /** What the tool produced before failing (kept as evidence). */
  readonly output?: unknown;
}

/** Base of every error the runtime raises on purpose. */
export class HarnessError extends Error {
  readonly httpStatus?: number;
  readonly exitCode?: number;
  readonly code?: string;
  readonly location?: string;
  readonly output?: unknown;

  constructor(name: string, message: string, props: HarnessErrorProps = {}) {
    super(props.location ? `${props.location}: ${message}` : message);
    this.name = name;
    this.httpStatus = props.httpStatus;
    this.exitCode = props.exitCode;
    this.code = props.code;
    this.location = props.location;
    this.output = props.output;
  }
}

/**
 * An event for an execution whose EXECUTION_COMPLETE is stored: the journal refuses it, whoever
 * writes it (a step runner or classifier whose invocation outlived the machine's timeout), so a
 * run's end is its last event. Nobody waits for such a writer: it is logged, not alarmed on.
 */
export class ExecutionEndedError extends HarnessError {
  constructor(
    readonly executionId: string,
    readonly refused: string,
  ) {
    super(
      'ExecutionEnded',
      `${refused} not journaled: execution ${executionId} has ended (EXECUTION_COMPLETE)`,
    );
  }
}

/**
 * An event larger than one journal record can hold (an item of the events table: DynamoDB's
 * 400 KB, here and on AWS): refused by name before the table's own error would say less.
 */
export class EventTooLargeError extends HarnessError {
  constructor(
    readonly refused: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      'EventTooLarge',
      `${refused} is ${bytes} bytes; a journal record holds at most ${limit} bytes (DynamoDB's item limit)`,
    );
  }
}

/** The step's arguments (or a handler's input) do not fit their schema: classified invalid_input. */
export class InvalidInputError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('InvalidInput', message, props);
  }
}

/**
 * A value a step produced does not fit the shape its step declares for it (`outputShapes`):
 * classified logic (the work produced the wrong thing; its recipe retries it).
 */
export class OutputShapeMismatchError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super(OUTPUT_SHAPE_MISMATCH, message, props);
  }
}

/** The name of {@link OutputShapeMismatchError}, which a worker answers with too. */
export const OUTPUT_SHAPE_MISMATCH = 'OutputShapeMismatch';

/** A tool or contract ran past its time limit: classified transient. */
export class TimeoutError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('TimeoutError', message, props);
  }
}

/** A step's contract did not pass: classified logic (the work is wrong, not the weather). */
export class ContractFailedError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('ContractFailed', message, props);
  }
}

/** A tool ran and reported failure (non-zero exit, HTTP error status, Lambda function error). */
export class ToolFailedError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('ToolFailed', message, props);
  }
}

/**
 * An agent ran and exited non-zero: its work failed. Classified by its exit code and message,
 * else logic (the agent's approach was wrong; its recipe retries it).
 */
export class AgentFailedError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('AgentFailed', message, props);
  }
}

/** Configuration the harness needs is missing (e.g. no agent command): nothing a retry can fix. */
export class NotConfiguredError extends HarnessError {
  constructor(message: string, props: HarnessErrorProps = {}) {
    super('NotConfigured', message, props);
  }
}

/** Reads the classifier's facts off anything thrown (Error, AWS SDK ServiceException, string). */
export function failureFacts(error: unknown): FailureFacts {
  if (error instanceof Error) {
    const e = error as Error & {
      code?: unknown;
      httpStatus?: unknown;
      exitCode?: unknown;
      $metadata?: { httpStatusCode?: number };
    };
    const httpStatus =
      typeof e.httpStatus === 'number' ? e.httpStatus : (e.$metadata?.httpStatusCode ?? undefined);
    return {
      name: e.name || 'Error',
      message: e.message,
      httpStatus,
      ...(typeof e.exitCode === 'number' ? { exitCode: e.exitCode } : {}),
      ...(typeof e.code === 'string' ? { code: e.code } : {}),
    };
  }
  return { name: 'Error', message: typeof error === 'string' ? error : JSON.stringify(error) };
}
