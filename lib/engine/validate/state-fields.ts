/** The fields each state type accepts, per query language, as AWS's schema does. */

import type { QueryLanguage } from '../types.ts';

export const STATE_TYPES = ['Task', 'Pass', 'Choice', 'Wait', 'Succeed', 'Fail', 'Parallel', 'Map'] as const;
export type StateType = (typeof STATE_TYPES)[number];

const COMMON = ['Type', 'Comment', 'QueryLanguage'];
const TRANSITION = ['Next', 'End'];
const JSONPATH_IO = ['InputPath', 'OutputPath'];

const JSONPATH_FIELDS: Record<StateType, readonly string[]> = {
  Pass: [...COMMON, ...TRANSITION, ...JSONPATH_IO, 'ResultPath', 'Parameters', 'Result', 'Assign'],
  Task: [
    ...COMMON,
    ...TRANSITION,
    ...JSONPATH_IO,
    'ResultPath',
    'Parameters',
    'ResultSelector',
    'Resource',
    'TimeoutSeconds',
    'TimeoutSecondsPath',
    'HeartbeatSeconds',
    'HeartbeatSecondsPath',
    'Retry',
    'Catch',
    'Credentials',
    'Assign',
  ],
  Choice: [...COMMON, ...JSONPATH_IO, 'Choices', 'Default', 'Assign'],
  Wait: [
    ...COMMON,
    ...TRANSITION,
    ...JSONPATH_IO,
    'Seconds',
    'Timestamp',
    'SecondsPath',
    'TimestampPath',
    'Assign',
  ],
  Succeed: [...COMMON, ...JSONPATH_IO],
  Fail: [...COMMON, 'Error', 'Cause', 'ErrorPath', 'CausePath'],
  Parallel: [
    ...COMMON,
    ...TRANSITION,
    ...JSONPATH_IO,
    'ResultPath',
    'Parameters',
    'ResultSelector',
    'Branches',
    'Retry',
    'Catch',
    'Assign',
  ],
  Map: [
    ...COMMON,
    ...TRANSITION,
    ...JSONPATH_IO,
    'ResultPath',
    'Parameters',
    'ItemSelector',
    'ResultSelector',
    'ItemsPath',
    'Iterator',
    'ItemProcessor',
    'MaxConcurrency',
    'MaxConcurrencyPath',
    'ItemReader',
    'ItemBatcher',
    'ResultWriter',
    'ToleratedFailureCount',
    'ToleratedFailureCountPath',
    'ToleratedFailurePercentage',
    'ToleratedFailurePercentagePath',
    'Label',
    'Retry',
    'Catch',
    'Assign',
  ],
};

const JSONATA_FIELDS: Record<StateType, readonly string[]> = {
  Pass: [...COMMON, ...TRANSITION, 'Output', 'Assign'],
  Task: [
    ...COMMON,
    ...TRANSITION,
    'Arguments',
    'Output',
    'Resource',
    'TimeoutSeconds',
    'HeartbeatSeconds',
    'Retry',
    'Catch',
    'Credentials',
    'Assign',
  ],
  Choice: [...COMMON, 'Choices', 'Default', 'Output', 'Assign'],
  Wait: [...COMMON, ...TRANSITION, 'Seconds', 'Timestamp', 'Output', 'Assign'],
  Succeed: [...COMMON, 'Output'],
  Fail: [...COMMON, 'Error', 'Cause'],
  Parallel: [...COMMON, ...TRANSITION, 'Arguments', 'Output', 'Branches', 'Retry', 'Catch', 'Assign'],
  Map: [
    ...COMMON,
    ...TRANSITION,
    'Arguments',
    'Output',
    'Items',
    'ItemSelector',
    'ItemProcessor',
    'MaxConcurrency',
    'ItemReader',
    'ItemBatcher',
    'ResultWriter',
    'ToleratedFailureCount',
    'ToleratedFailurePercentage',
    'Label',
    'Retry',
    'Catch',
    'Assign',
  ],
};

/** Fields a state of `type` may have under `language`. */
export function allowedFields(type: StateType, language: QueryLanguage): ReadonlySet<string> {
  return new Set((language === 'JSONata' ? JSONATA_FIELDS : JSONPATH_FIELDS)[type]);
}

/** True when `field` is valid for `type` in the other query language (for a better message). */
export function fieldOfOtherLanguage(type: StateType, language: QueryLanguage, field: string): boolean {
  return (language === 'JSONata' ? JSONPATH_FIELDS : JSONATA_FIELDS)[type].includes(field);
}
