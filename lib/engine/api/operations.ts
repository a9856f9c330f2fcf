import { z } from 'zod';
import type { StepFunctionsEngine } from '../types.ts';

const str = z.string();
const int = z.number().int();
const bool = z.boolean();
const struct = z.looseObject({});
const maxResults = int.min(0).max(1000);

/** Request shapes of the operations the engine serves (AWS JSON 1.0 member names; unknown members are ignored, as AWS does). */
const SHAPES = {
  CreateStateMachine: z.looseObject({
    name: str,
    definition: str,
    roleArn: str,
    type: str.optional(),
    loggingConfiguration: struct.optional(),
    tags: z.array(struct).optional(),
    tracingConfiguration: struct.optional(),
    publish: bool.optional(),
    versionDescription: str.optional(),
    encryptionConfiguration: struct.optional(),
  }),
  UpdateStateMachine: z.looseObject({
    stateMachineArn: str,
    definition: str.optional(),
    roleArn: str.optional(),
    loggingConfiguration: struct.optional(),
    tracingConfiguration: struct.optional(),
    publish: bool.optional(),
    versionDescription: str.optional(),
    encryptionConfiguration: struct.optional(),
  }),
  DescribeStateMachine: z.looseObject({ stateMachineArn: str, includedData: str.optional() }),
  ListStateMachines: z.looseObject({ maxResults: maxResults.optional(), nextToken: str.optional() }),
  DeleteStateMachine: z.looseObject({ stateMachineArn: str }),
  PublishStateMachineVersion: z.looseObject({
    stateMachineArn: str,
    revisionId: str.optional(),
    description: str.optional(),
  }),
  ListStateMachineVersions: z.looseObject({
    stateMachineArn: str,
    nextToken: str.optional(),
    maxResults: maxResults.optional(),
  }),
  DeleteStateMachineVersion: z.looseObject({ stateMachineVersionArn: str }),
  CreateStateMachineAlias: z.looseObject({
    name: str,
    description: str.optional(),
    routingConfiguration: z.array(struct),
  }),
  DescribeStateMachineAlias: z.looseObject({ stateMachineAliasArn: str }),
  UpdateStateMachineAlias: z.looseObject({
    stateMachineAliasArn: str,
    description: str.optional(),
    routingConfiguration: z.array(struct).optional(),
  }),
  ListStateMachineAliases: z.looseObject({
    stateMachineArn: str,
    nextToken: str.optional(),
    maxResults: maxResults.optional(),
  }),
  DeleteStateMachineAlias: z.looseObject({ stateMachineAliasArn: str }),
  ValidateStateMachineDefinition: z.looseObject({
    definition: str,
    type: str.optional(),
    severity: str.optional(),
    maxResults: int.min(0).max(100).optional(),
  }),
  StartExecution: z.looseObject({
    stateMachineArn: str,
    name: str.optional(),
    input: str.optional(),
    traceHeader: str.optional(),
  }),
  StartSyncExecution: z.looseObject({
    stateMachineArn: str,
    name: str.optional(),
    input: str.optional(),
    traceHeader: str.optional(),
    includedData: str.optional(),
  }),
  DescribeExecution: z.looseObject({ executionArn: str, includedData: str.optional() }),
  ListExecutions: z.looseObject({
    stateMachineArn: str.optional(),
    statusFilter: str.optional(),
    maxResults: maxResults.optional(),
    nextToken: str.optional(),
    mapRunArn: str.optional(),
    redriveFilter: str.optional(),
  }),
  GetExecutionHistory: z.looseObject({
    executionArn: str,
    maxResults: maxResults.optional(),
    reverseOrder: bool.optional(),
    nextToken: str.optional(),
    includeExecutionData: bool.optional(),
  }),
  StopExecution: z.looseObject({ executionArn: str, error: str.optional(), cause: str.optional() }),
  RedriveExecution: z.looseObject({ executionArn: str, clientToken: str.optional() }),
  SendTaskSuccess: z.looseObject({ taskToken: str, output: str }),
  SendTaskFailure: z.looseObject({ taskToken: str, error: str.optional(), cause: str.optional() }),
  SendTaskHeartbeat: z.looseObject({ taskToken: str }),
  CreateActivity: z.looseObject({
    name: str,
    tags: z.array(struct).optional(),
    encryptionConfiguration: struct.optional(),
  }),
  DescribeActivity: z.looseObject({ activityArn: str }),
  ListActivities: z.looseObject({ maxResults: maxResults.optional(), nextToken: str.optional() }),
  DeleteActivity: z.looseObject({ activityArn: str }),
  GetActivityTask: z.looseObject({ activityArn: str, workerName: str.min(1).max(80).optional() }),
} as const;

export type OperationName = keyof typeof SHAPES;

/** The engine method that serves an operation: `StartExecution` → `startExecution`. */
export function methodName(operation: OperationName): keyof StepFunctionsEngine {
  return `${operation.charAt(0).toLowerCase()}${operation.slice(1)}` as keyof StepFunctionsEngine;
}

export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(SHAPES, name);
}

export function requestShape(operation: OperationName): z.ZodType<Record<string, unknown>> {
  return SHAPES[operation] as unknown as z.ZodType<Record<string, unknown>>;
}
