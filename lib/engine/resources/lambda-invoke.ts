/** Lambda functions run in process, called as AWS Lambda calls them (`lambda:invoke` and plain function ARNs). */
import { RandomPool } from '../core/random.ts';
import { type AbortWatcher, AbortWatchers } from '../core/timers.ts';
import { type LambdaLikeContext, type PayloadTextMemo, StatesError, type TaskInvocation } from '../types.ts';
import { errorPayload, functionErrorToStatesError, lambdaServiceError } from './lambda-errors.ts';
import { type LambdaHandlerRegistry, parseFunctionName, type ResolvedFunction } from './lambda-registry.ts';
import type { SdkMetadata } from './sdk-metadata.ts';

/** Lambda's longest function timeout, used as the remaining time when the task sets none. */
const MAX_LAMBDA_SECONDS = 900;
/** Lambda's limit on a synchronous response payload. */
const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;

/** The names a function's context reports, built once per function. */
interface FunctionNames {
  readonly invokedFunctionArn: string;
  readonly logGroupName: string;
  readonly logStreamName: string;
}

/** What a failed handler call ends with: the abort as it is, else the function error as Step Functions reports it. */
function handlerFailure(error: unknown, signal: AbortSignal): unknown {
  return signal.aborted ? error : functionErrorToStatesError(error);
}

/** The handler's result as Lambda returns it: serialized (size-checked) and parsed again. */
function serializedResult(result: unknown, requestId: string, texts: PayloadTextMemo | undefined): unknown {
  let serialized: string | undefined;
  try {
    serialized = JSON.stringify(result);
  } catch (error) {
    throw functionErrorToStatesError({ ...errorPayload(error), errorType: 'Runtime.MarshalError' });
  }
  // a UTF-16 unit takes at most 3 UTF-8 bytes: short texts cannot be over the limit
  if (
    serialized !== undefined &&
    serialized.length * 3 > MAX_RESPONSE_BYTES &&
    Buffer.byteLength(serialized) > MAX_RESPONSE_BYTES
  ) {
    throw lambdaServiceError(
      'AWSLambdaException',
      'Response payload size exceeded maximum allowed payload size (6291556 bytes).',
      413,
      requestId,
    );
  }
  if (serialized === undefined) return null;
  const copy: unknown = JSON.parse(serialized);
  texts?.remember(copy, serialized);
  return copy;
}

/**
 * What the handler's promise ends with, as Lambda reports it (its serialized result, or the
 * function error), or the signal's reason once the signal aborts first; settled in one hop.
 */
function handlerOutcome(work: Promise<unknown>, call: HandlerCall): Promise<unknown> {
  const outcome = new Promise<unknown>((resolve, reject) => {
    call.resolve = resolve;
    call.reject = reject;
  });
  try {
    work.then(
      (value) => call.succeeded(value),
      (error) => call.failed(error),
    );
  } catch (error) {
    call.failed(error); // the handler returned no promise
  }
  return outcome;
}

/**
 * One handler call waiting to settle: a class rather than closures, since tsx names every named
 * closure (an `Object.defineProperty`) each time one is created.
 */
class HandlerCall implements AbortWatcher {
  resolve: (value: unknown) => void = ignore;
  reject: (error: unknown) => void = ignore;
  private readonly watchers: Set<AbortWatcher>;

  constructor(
    private readonly signal: AbortSignal,
    private readonly requestId: string,
    watchers: AbortWatchers,
    /** Where the result's text goes (the engine's memo), if anywhere. */
    private readonly texts: PayloadTextMemo | undefined,
  ) {
    this.watchers = watchers.of(signal);
    this.watchers.add(this);
  }

  aborted(reason: unknown): void {
    this.reject(reason);
  }

  succeeded(value: unknown): void {
    this.watchers.delete(this);
    try {
      this.resolve(serializedResult(value, this.requestId, this.texts));
    } catch (error) {
      this.reject(error);
    }
  }

  failed(error: unknown): void {
    this.watchers.delete(this);
    this.reject(handlerFailure(error, this.signal));
  }
}

function ignore(): void {}

/**
 * `JSON.stringify` of a synchronous invocation's response (above), joined from its parts: every
 * value but the payload is ASCII that JSON does not escape (digits, hex, the HTTP date), and the
 * payload is JSON text already. `tests/engine/resources.test.ts` holds it equal to the serialization.
 */
function invokeResponseText(
  payloadJson: string,
  requestId: string,
  length: number,
  date: string,
  traceId: string,
): string {
  return [
    '{"ExecutedVersion":"$LATEST","Payload":',
    payloadJson,
    ',"SdkHttpMetadata":{"AllHttpHeaders":{"Content-Type":["application/json"],"Content-Length":["',
    length,
    '"],"Connection":["keep-alive"],"Date":["',
    date,
    '"],"X-Amz-Executed-Version":["$LATEST"],"x-amzn-Remapped-Content-Length":["0"],"x-amzn-RequestId":["',
    requestId,
    '"],"X-Amzn-Trace-Id":["',
    traceId,
    '"]},"HttpHeaders":{"Content-Type":"application/json","Content-Length":"',
    length,
    '","Connection":"keep-alive","Date":"',
    date,
    '","X-Amz-Executed-Version":"$LATEST","x-amzn-Remapped-Content-Length":"0","x-amzn-RequestId":"',
    requestId,
    '","X-Amzn-Trace-Id":"',
    traceId,
    '"},"HttpStatusCode":200},"SdkResponseMetadata":{"RequestId":"',
    requestId,
    '"},"StatusCode":200}',
  ].join('');
}

/**
 * The SDK metadata (see sdk-metadata.ts) of Lambda's response headers, built directly: the headers are spelled as
 * AWS spells them already, so nothing needs renaming.
 */
function lambdaMetadata(
  requestId: string,
  contentLength: number,
  statusCode: number,
  date: string,
  traceId: string,
): SdkMetadata {
  const length = String(contentLength);
  // literals in the same order rather than one built from the other key by key
  const HttpHeaders: Record<string, string> = {
    'Content-Type': 'application/json',
    'Content-Length': length,
    Connection: 'keep-alive',
    Date: date,
    'X-Amz-Executed-Version': '$LATEST',
    'x-amzn-Remapped-Content-Length': '0',
    'x-amzn-RequestId': requestId,
    'X-Amzn-Trace-Id': traceId,
  };
  const AllHttpHeaders: Record<string, string[]> = {
    'Content-Type': ['application/json'],
    'Content-Length': [length],
    Connection: ['keep-alive'],
    Date: [date],
    'X-Amz-Executed-Version': ['$LATEST'],
    'x-amzn-Remapped-Content-Length': ['0'],
    'x-amzn-RequestId': [requestId],
    'X-Amzn-Trace-Id': [traceId],
  };
  return {
    SdkHttpMetadata: { AllHttpHeaders, HttpHeaders, HttpStatusCode: statusCode },
    SdkResponseMetadata: { RequestId: requestId },
  };
}

/**
 * The in-process Lambda functions of one resource invoker, called as AWS Lambda calls them: a JSON
 * copy of the event in and of the result out, a context object and a request id per call. What it
 * keeps (each function's context names and log stream, random bytes, the abort watchers of the
 * signals its calls watch, the formatted date) is its own.
 */
export class InProcessLambda {
  /** The names each function's context reports, built once per function. */
  private readonly namesByFunction = new WeakMap<ResolvedFunction, FunctionNames>();
  /** One log stream per function, as one warm Lambda sandbox keeps its stream for its lifetime. */
  private readonly logStreams = new Map<string, string>();
  private readonly random = new RandomPool();
  private readonly watchers = new AbortWatchers();
  /** The HTTP Date header of the current second. */
  private dateSecond = Number.NaN;
  private dateText = '';

  constructor(private readonly registry: LambdaHandlerRegistry) {}

  /** `arn:aws:states:::lambda:invoke`: Parameters are Lambda's Invoke request; the result is Invoke's response. */
  async invokeIntegration(invocation: TaskInvocation): Promise<unknown> {
    const parameters = (invocation.parameters ?? {}) as Record<string, unknown>;
    const requestId = this.random.requestId();
    const functionName = parameters.FunctionName;
    if (typeof functionName !== 'string' || functionName === '') {
      throw new StatesError(
        'Lambda.InvalidParameterValueException',
        `1 validation error detected: Value null at 'functionName' failed to satisfy constraint: Member must not be null (Service: AWSLambda; Status Code: 400; Error Code: InvalidParameterValueException; Request ID: ${requestId}; Proxy: null)`,
      );
    }
    const qualified =
      typeof parameters.Qualifier === 'string' ? `${functionName}:${parameters.Qualifier}` : functionName;
    const fn = this.registry.resolveRegistered(qualified) ?? (await this.findFunction(qualified, requestId));
    const event = parameters.Payload;
    if (parameters.InvocationType === 'Event' || parameters.InvocationType === 'DryRun') {
      if (parameters.InvocationType === 'Event') {
        // Asynchronous invocation: Lambda accepts the event and runs the function later; its outcome is not reported.
        this.callHandler(fn, event, { ...invocation, signal: new AbortController().signal }, requestId).catch(
          () => undefined,
        );
      }
      const status = parameters.InvocationType === 'Event' ? 202 : 204;
      const now = Date.now();
      return {
        Payload: '',
        StatusCode: status,
        ...lambdaMetadata(requestId, 0, status, this.httpDate(now), this.traceIdOf(now)),
      };
    }
    const payload = await this.callHandler(fn, event, invocation, requestId);
    // the text callHandler parsed the payload from, not a second serialization
    const texts = invocation.payloadTexts;
    const payloadJson = texts === undefined ? JSON.stringify(payload) : texts.of(payload);
    const length = Buffer.byteLength(payloadJson);
    const now = Date.now();
    const date = this.httpDate(now);
    const traceId = this.traceIdOf(now);
    const response = {
      ExecutedVersion: '$LATEST',
      Payload: payload,
      ...lambdaMetadata(requestId, length, 200, date, traceId),
      StatusCode: 200,
    };
    // its history text (TaskSubmitted of a callback, or the task's result) without serializing it
    texts?.remember(response, invokeResponseText(payloadJson, requestId, length, date, traceId));
    return response;
  }

  /** A plain function ARN resource: the state input is the event, the function's return value is the result. */
  invokeFunction(invocation: TaskInvocation): Promise<unknown> {
    const requestId = this.random.requestId();
    const registered = this.registry.resolveRegistered(invocation.resource);
    if (registered) return this.callHandler(registered, invocation.parameters, invocation, requestId);
    return this.findFunction(invocation.resource, requestId).then((fn) =>
      this.callHandler(fn, invocation.parameters, invocation, requestId),
    );
  }

  /**
   * Calls a registered handler as Lambda would; resolves to a copy of its JSON-serialized result
   * (undefined → null). Not an async function: the handler's settlement reaches the task with one
   * promise hop fewer.
   */
  private callHandler(
    fn: ResolvedFunction,
    event: unknown,
    invocation: TaskInvocation,
    requestId: string,
  ): Promise<unknown> {
    // on the monotonic clock: a wall-clock step does not eat the handler's time
    const deadline = performance.now() + (invocation.timeoutSeconds ?? MAX_LAMBDA_SECONDS) * 1000;
    const names = this.namesOf(fn);
    const context: LambdaLikeContext = {
      functionName: fn.functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: names.invokedFunctionArn,
      memoryLimitInMB: '128',
      awsRequestId: requestId,
      logGroupName: names.logGroupName,
      logStreamName: names.logStreamName,
      // a method, not an arrow property: nothing to name on every call
      getRemainingTimeInMillis() {
        return Math.max(0, Math.round(deadline - performance.now()));
      },
      callbackWaitsForEmptyEventLoop: true,
    };
    // Lambda hands the handler its event as JSON (a fresh copy) and serializes what it returns;
    // the engine has usually just written the same text into the history
    const texts = invocation.payloadTexts;
    const eventCopy =
      event === undefined ? {} : JSON.parse(texts === undefined ? JSON.stringify(event) : texts.of(event));
    const { signal } = invocation;
    let running: Promise<unknown>;
    try {
      running = fn.handler(eventCopy, context);
    } catch (error) {
      return Promise.reject(handlerFailure(error, signal));
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    return handlerOutcome(running, new HandlerCall(signal, requestId, this.watchers, texts));
  }

  private async findFunction(reference: string, requestId: string): Promise<ResolvedFunction> {
    let fn: ResolvedFunction | undefined;
    try {
      fn = await this.registry.resolve(reference);
    } catch (error) {
      throw functionErrorToStatesError(error);
    }
    if (fn) return fn;
    const { name, qualifier } = parseFunctionName(reference);
    throw lambdaServiceError(
      'ResourceNotFoundException',
      `Function not found: ${this.registry.functionArn(name)}:${qualifier ?? '$LATEST'}`,
      404,
      requestId,
    );
  }

  private namesOf(fn: ResolvedFunction): FunctionNames {
    let names = this.namesByFunction.get(fn);
    if (!names) {
      names = {
        invokedFunctionArn: fn.qualifier ? `${fn.functionArn}:${fn.qualifier}` : fn.functionArn,
        logGroupName: `/aws/lambda/${fn.functionName}`,
        logStreamName: this.logStreamOf(fn.functionName),
      };
      this.namesByFunction.set(fn, names);
    }
    return names;
  }

  private logStreamOf(functionName: string): string {
    let stream = this.logStreams.get(functionName);
    if (!stream) {
      const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
      stream = `${day}/[$LATEST]${this.random.hex(16)}`;
      this.logStreams.set(functionName, stream);
    }
    return stream;
  }

  /** An X-Ray trace id header value, as Lambda answers one. */
  private traceIdOf(ms: number): string {
    return `Root=1-${Math.floor(ms / 1000).toString(16)}-${this.random.hex(12)};Sampled=0`;
  }

  /** The HTTP Date header (whole seconds), formatted once per second. */
  private httpDate(ms: number): string {
    const second = Math.floor(ms / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      this.dateText = new Date(ms).toUTCString();
    }
    return this.dateText;
  }
}
