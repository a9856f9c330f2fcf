import { z } from 'zod';
import type { StepFunctionsEngine } from '../types.ts';

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
 * Request shapes of the operations the engine serves, with the constraints of AWS's service model
 * (lengths, ranges, enums): AWS JSON 1.0 member names; unknown members are ignored, as AWS does.
 */
const SHAPES = {
  CreateStateMachine: z.looseObject({
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
  UpdateStateMachine: z.looseObject({
    stateMachineArn: arn,
    definition: definition.optional(),
    roleArn: arn.optional(),
    loggingConfiguration: struct.optional(),
    tracingConfiguration: struct.optional(),
    publish: bool.optional(),
    versionDescription: description.optional(),
    encryptionConfiguration: struct.optional(),
  }),
  DescribeStateMachine: z.looseObject({ stateMachineArn: arn, includedData: includedData.optional() }),
  ListStateMachines: z.looseObject({ maxResults: maxResults.optional(), nextToken: pageToken.optional() }),
  DeleteStateMachine: z.looseObject({ stateMachineArn: arn }),
  PublishStateMachineVersion: z.looseObject({
    stateMachineArn: arn,
    revisionId: str.optional(),
    description: description.optional(),
  }),
  ListStateMachineVersions: z.looseObject({
    stateMachineArn: arn,
    nextToken: pageToken.optional(),
    maxResults: maxResults.optional(),
  }),
  DeleteStateMachineVersion: z.looseObject({ stateMachineVersionArn: text(1, 2000) }),
  CreateStateMachineAlias: z.looseObject({
    name,
    description: description.optional(),
    routingConfiguration: routing,
  }),
  DescribeStateMachineAlias: z.looseObject({ stateMachineAliasArn: arn }),
  UpdateStateMachineAlias: z.looseObject({
    stateMachineAliasArn: arn,
    description: description.optional(),
    routingConfiguration: routing.optional(),
  }),
  ListStateMachineAliases: z.looseObject({
    stateMachineArn: arn,
    nextToken: pageToken.optional(),
    maxResults: maxResults.optional(),
  }),
  DeleteStateMachineAlias: z.looseObject({ stateMachineAliasArn: arn }),
  ValidateStateMachineDefinition: z.looseObject({
    definition,
    type: machineType.optional(),
    severity: z.enum(['ERROR', 'WARNING']).optional(),
    maxResults: int.min(0).max(100).optional(),
  }),
  StartExecution: z.looseObject({
    stateMachineArn: arn,
    name: name.optional(),
    input: payload.optional(),
    traceHeader: text(0, 256).optional(),
  }),
  StartSyncExecution: z.looseObject({
    stateMachineArn: arn,
    name: name.optional(),
    input: payload.optional(),
    traceHeader: text(0, 256).optional(),
    includedData: includedData.optional(),
  }),
  DescribeExecution: z.looseObject({ executionArn: arn, includedData: includedData.optional() }),
  DescribeStateMachineForExecution: z.looseObject({
    executionArn: arn,
    includedData: includedData.optional(),
  }),
  ListExecutions: z.looseObject({
    stateMachineArn: arn.optional(),
    statusFilter: z
      .enum(['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'PENDING_REDRIVE'])
      .optional(),
    maxResults: maxResults.optional(),
    nextToken: text(1, 3096).optional(),
    mapRunArn: text(1, 2000).optional(),
    redriveFilter: z.enum(['REDRIVEN', 'NOT_REDRIVEN']).optional(),
  }),
  GetExecutionHistory: z.looseObject({
    executionArn: arn,
    maxResults: maxResults.optional(),
    reverseOrder: bool.optional(),
    nextToken: pageToken.optional(),
    includeExecutionData: bool.optional(),
  }),
  StopExecution: z.looseObject({
    executionArn: arn,
    error: text(0, 256).optional(),
    cause: text(0, 32_768).optional(),
  }),
  RedriveExecution: z.looseObject({ executionArn: arn, clientToken: text(1, 64).optional() }),
  SendTaskSuccess: z.looseObject({ taskToken, output: payload }),
  SendTaskFailure: z.looseObject({
    taskToken,
    error: text(0, 256).optional(),
    cause: text(0, 32_768).optional(),
  }),
  SendTaskHeartbeat: z.looseObject({ taskToken }),
  CreateActivity: z.looseObject({
    name,
    tags: z.array(tag).optional(),
    encryptionConfiguration: struct.optional(),
  }),
  DescribeActivity: z.looseObject({ activityArn: arn }),
  ListActivities: z.looseObject({ maxResults: maxResults.optional(), nextToken: pageToken.optional() }),
  DeleteActivity: z.looseObject({ activityArn: arn }),
  GetActivityTask: z.looseObject({ activityArn: arn, workerName: name.optional() }),
  TagResource: z.looseObject({ resourceArn: arn, tags: z.array(tag) }),
  UntagResource: z.looseObject({ resourceArn: arn, tagKeys: z.array(text(1, 128)) }),
  ListTagsForResource: z.looseObject({ resourceArn: arn }),
} as const;

export type OperationName = keyof typeof SHAPES;

/** The engine method that serves an operation: `StartExecution` → `startExecution`. */
export function methodName(operation: OperationName): keyof StepFunctionsEngine {
  return `${operation.charAt(0).toLowerCase()}${operation.slice(1)}` as keyof StepFunctionsEngine;
}

/** Every operation the engine serves, in the order above. */
export const OPERATION_NAMES = Object.keys(SHAPES) as OperationName[];

export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(SHAPES, name);
}

export function requestShape(operation: OperationName): z.ZodType<Record<string, unknown>> {
  return SHAPES[operation] as unknown as z.ZodType<Record<string, unknown>>;
}
