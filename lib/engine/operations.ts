/**
 * The Step Functions API the engine serves, as one list: each operation's request shape (the
 * constraints of AWS's service model) and, as types, its input and output (@aws-sdk/client-sfn's).
 * `StepFunctionsEngine` (what `Engine` implements), the HTTP dispatch (lib/engine/api) and the
 * boto3 test's coverage all follow from it: an operation added here is served everywhere or the
 * build fails.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import { z } from 'zod';

const str = z.string();
const int = z.number().int();
const bool = z.boolean();
const struct = z.looseObject({});
const maxResults = int.min(0).max(1000);
/** A string of the model's length limits (ValidationException beyond them, as AWS answers). */
const text = (min: number, max: number) => str.min(min).max(max);
const arn = text(1, 256);
const name = text(1, 80);
const definition = text(1, 1_048_576);
const description = text(0, 256);
const payload = text(0, 262_144);
const taskToken = text(1, 2048);
const pageToken = text(1, 1024);
const includedData = z.enum(['ALL_DATA', 'METADATA_ONLY']);
const machineType = z.enum(['STANDARD', 'EXPRESS']);
const tag = z.looseObject({ key: text(1, 128), value: text(0, 256).optional() });
const routing = z
  .array(z.looseObject({ stateMachineVersionArn: arn, weight: int.min(0).max(100) }))
  .min(1)
  .max(2);

/**
 * One operation: its request shape, with the constraints of AWS's service model (lengths, ranges,
 * enums; AWS JSON 1.0 member names; unknown members are ignored, as AWS does), and its input and
 * output types.
 */
export interface Operation<Input, Output> {
  readonly request: z.ZodType<Record<string, unknown>>;
  /** Types only, never set: what the operation takes and returns. */
  readonly io?: { readonly input: Input; readonly output: Output };
}

function operation<Input, Output>(request: z.ZodType<Record<string, unknown>>): Operation<Input, Output> {
  return { request };
}

/** Every operation the engine serves. */
export const OPERATIONS = {
  CreateStateMachine: operation<sfn.CreateStateMachineInput, sfn.CreateStateMachineOutput>(
    z.looseObject({
      name,
      definition,
      roleArn: arn,
      type: machineType.optional(),
      loggingConfiguration: struct.optional(),
      tags: z.array(tag).optional(),
      tracingConfiguration: struct.optional(),
      publish: bool.optional(),
      versionDescription: description.optional(),
      encryptionConfiguration: struct.optional(),
    }),
  ),
  UpdateStateMachine: operation<sfn.UpdateStateMachineInput, sfn.UpdateStateMachineOutput>(
    z.looseObject({
      stateMachineArn: arn,
      definition: definition.optional(),
      roleArn: arn.optional(),
      loggingConfiguration: struct.optional(),
      tracingConfiguration: struct.optional(),
      publish: bool.optional(),
      versionDescription: description.optional(),
      encryptionConfiguration: struct.optional(),
    }),
  ),
  DescribeStateMachine: operation<sfn.DescribeStateMachineInput, sfn.DescribeStateMachineOutput>(
    z.looseObject({ stateMachineArn: arn, includedData: includedData.optional() }),
  ),
  ListStateMachines: operation<sfn.ListStateMachinesInput, sfn.ListStateMachinesOutput>(
    z.looseObject({ maxResults: maxResults.optional(), nextToken: pageToken.optional() }),
  ),
  DeleteStateMachine: operation<sfn.DeleteStateMachineInput, sfn.DeleteStateMachineOutput>(
    z.looseObject({ stateMachineArn: arn }),
  ),
  PublishStateMachineVersion: operation<
    sfn.PublishStateMachineVersionInput,
    sfn.PublishStateMachineVersionOutput
  >(
    z.looseObject({
      stateMachineArn: arn,
      revisionId: str.optional(),
      description: description.optional(),
    }),
  ),
  ListStateMachineVersions: operation<sfn.ListStateMachineVersionsInput, sfn.ListStateMachineVersionsOutput>(
    z.looseObject({
      stateMachineArn: arn,
      nextToken: pageToken.optional(),
      maxResults: maxResults.optional(),
    }),
  ),
  DeleteStateMachineVersion: operation<
    sfn.DeleteStateMachineVersionInput,
    sfn.DeleteStateMachineVersionOutput
  >(z.looseObject({ stateMachineVersionArn: text(1, 2000) })),
  CreateStateMachineAlias: operation<sfn.CreateStateMachineAliasInput, sfn.CreateStateMachineAliasOutput>(
    z.looseObject({
      name,
      description: description.optional(),
      routingConfiguration: routing,
    }),
  ),
  DescribeStateMachineAlias: operation<
    sfn.DescribeStateMachineAliasInput,
    sfn.DescribeStateMachineAliasOutput
  >(z.looseObject({ stateMachineAliasArn: arn })),
  UpdateStateMachineAlias: operation<sfn.UpdateStateMachineAliasInput, sfn.UpdateStateMachineAliasOutput>(
    z.looseObject({
      stateMachineAliasArn: arn,
      description: description.optional(),
      routingConfiguration: routing.optional(),
    }),
  ),
  ListStateMachineAliases: operation<sfn.ListStateMachineAliasesInput, sfn.ListStateMachineAliasesOutput>(
    z.looseObject({
      stateMachineArn: arn,
      nextToken: pageToken.optional(),
      maxResults: maxResults.optional(),
    }),
  ),
  DeleteStateMachineAlias: operation<sfn.DeleteStateMachineAliasInput, sfn.DeleteStateMachineAliasOutput>(
    z.looseObject({ stateMachineAliasArn: arn }),
  ),
  ValidateStateMachineDefinition: operation<
    sfn.ValidateStateMachineDefinitionInput,
    sfn.ValidateStateMachineDefinitionOutput
  >(
    z.looseObject({
      definition,
      type: machineType.optional(),
      severity: z.enum(['ERROR', 'WARNING']).optional(),
      maxResults: int.min(0).max(100).optional(),
    }),
  ),
  StartExecution: operation<sfn.StartExecutionInput, sfn.StartExecutionOutput>(
    z.looseObject({
      stateMachineArn: arn,
      name: name.optional(),
      input: payload.optional(),
      traceHeader: text(0, 256).optional(),
    }),
  ),
  StartSyncExecution: operation<sfn.StartSyncExecutionInput, sfn.StartSyncExecutionOutput>(
    z.looseObject({
      stateMachineArn: arn,
      name: name.optional(),
      input: payload.optional(),
      traceHeader: text(0, 256).optional(),
      includedData: includedData.optional(),
    }),
  ),
  DescribeExecution: operation<sfn.DescribeExecutionInput, sfn.DescribeExecutionOutput>(
    z.looseObject({ executionArn: arn, includedData: includedData.optional() }),
  ),
  DescribeStateMachineForExecution: operation<
    sfn.DescribeStateMachineForExecutionInput,
    sfn.DescribeStateMachineForExecutionOutput
  >(
    z.looseObject({
      executionArn: arn,
      includedData: includedData.optional(),
    }),
  ),
  ListExecutions: operation<sfn.ListExecutionsInput, sfn.ListExecutionsOutput>(
    z.looseObject({
      stateMachineArn: arn.optional(),
      statusFilter: z
        .enum(['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'PENDING_REDRIVE'])
        .optional(),
      maxResults: maxResults.optional(),
      nextToken: text(1, 3096).optional(),
      mapRunArn: text(1, 2000).optional(),
      redriveFilter: z.enum(['REDRIVEN', 'NOT_REDRIVEN']).optional(),
    }),
  ),
  GetExecutionHistory: operation<sfn.GetExecutionHistoryInput, sfn.GetExecutionHistoryOutput>(
    z.looseObject({
      executionArn: arn,
      maxResults: maxResults.optional(),
      reverseOrder: bool.optional(),
      nextToken: pageToken.optional(),
      includeExecutionData: bool.optional(),
    }),
  ),
  StopExecution: operation<sfn.StopExecutionInput, sfn.StopExecutionOutput>(
    z.looseObject({
      executionArn: arn,
      error: text(0, 256).optional(),
      cause: text(0, 32_768).optional(),
    }),
  ),
  RedriveExecution: operation<sfn.RedriveExecutionInput, sfn.RedriveExecutionOutput>(
    z.looseObject({ executionArn: arn, clientToken: text(1, 64).optional() }),
  ),
  SendTaskSuccess: operation<sfn.SendTaskSuccessInput, sfn.SendTaskSuccessOutput>(
    z.looseObject({ taskToken, output: payload }),
  ),
  SendTaskFailure: operation<sfn.SendTaskFailureInput, sfn.SendTaskFailureOutput>(
    z.looseObject({
      taskToken,
      error: text(0, 256).optional(),
      cause: text(0, 32_768).optional(),
    }),
  ),
  SendTaskHeartbeat: operation<sfn.SendTaskHeartbeatInput, sfn.SendTaskHeartbeatOutput>(
    z.looseObject({ taskToken }),
  ),
  CreateActivity: operation<sfn.CreateActivityInput, sfn.CreateActivityOutput>(
    z.looseObject({
      name,
      tags: z.array(tag).optional(),
      encryptionConfiguration: struct.optional(),
    }),
  ),
  DescribeActivity: operation<sfn.DescribeActivityInput, sfn.DescribeActivityOutput>(
    z.looseObject({ activityArn: arn }),
  ),
  ListActivities: operation<sfn.ListActivitiesInput, sfn.ListActivitiesOutput>(
    z.looseObject({ maxResults: maxResults.optional(), nextToken: pageToken.optional() }),
  ),
  DeleteActivity: operation<sfn.DeleteActivityInput, sfn.DeleteActivityOutput>(
    z.looseObject({ activityArn: arn }),
  ),
  GetActivityTask: operation<sfn.GetActivityTaskInput, sfn.GetActivityTaskOutput>(
    z.looseObject({ activityArn: arn, workerName: name.optional() }),
  ),
  TagResource: operation<sfn.TagResourceInput, sfn.TagResourceOutput>(
    z.looseObject({ resourceArn: arn, tags: z.array(tag) }),
  ),
  UntagResource: operation<sfn.UntagResourceInput, sfn.UntagResourceOutput>(
    z.looseObject({ resourceArn: arn, tagKeys: z.array(text(1, 128)) }),
  ),
  ListTagsForResource: operation<sfn.ListTagsForResourceInput, sfn.ListTagsForResourceOutput>(
    z.looseObject({ resourceArn: arn }),
  ),
} as const;

export type OperationName = keyof typeof OPERATIONS;

type InputOf<N extends OperationName> =
  (typeof OPERATIONS)[N] extends Operation<infer I, unknown> ? I : never;
type OutputOf<N extends OperationName> =
  (typeof OPERATIONS)[N] extends Operation<unknown, infer O> ? O : never;

/** What a caller in process may add to any operation. */
export interface OperationOptions {
  /** Aborts when the caller has gone: ends a GetActivityTask long poll without taking a task (the server passes its request's). */
  readonly signal?: AbortSignal;
}

/** The method that serves an operation: `StartExecution` → `startExecution`. */
export type MethodName<N extends OperationName = OperationName> = Uncapitalize<N>;

/** The Step Functions API, as the engine implements it: one method per operation, same names and shapes as @aws-sdk/client-sfn. */
export type StepFunctionsEngine = {
  [N in OperationName as MethodName<N>]: (
    input: InputOf<N>,
    options?: OperationOptions,
  ) => Promise<OutputOf<N>>;
};

/** The engine method that serves an operation: `StartExecution` → `startExecution`. */
export function methodName<N extends OperationName>(operation: N): MethodName<N> {
  return `${operation.charAt(0).toLowerCase()}${operation.slice(1)}` as MethodName<N>;
}

/** Every operation the engine serves, in the order above. */
export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(OPERATIONS, name);
}

export function requestShape(operation: OperationName): z.ZodType<Record<string, unknown>> {
  return OPERATIONS[operation].request;
}
