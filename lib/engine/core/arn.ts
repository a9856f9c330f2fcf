/** ARNs and resource names of the embedded engine, validated so that nothing a caller sends can reach the file system. */
import { SfnServiceError } from '../types.ts';

/** Where ARNs point: partition, region and account of this engine. */
export interface ArnScope {
  readonly region: string;
  readonly accountId: string;
}

/** AWS's rule for state machine, execution and alias names: 1-80 chars, no whitespace, wildcards, brackets, control chars. */
const NAME_PATTERN = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]{1,80}$/u;

/** Throws AWS's InvalidName unless `name` is a valid resource name. */
export function assertValidName(name: unknown, what = 'name', code = 'InvalidName'): asserts name is string {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new SfnServiceError(code, `Invalid ${what}: '${String(name).slice(0, 100)}'`);
  }
}

export function stateMachineArn(scope: ArnScope, name: string): string {
  return `arn:aws:states:${scope.region}:${scope.accountId}:stateMachine:${name}`;
}

export function executionArn(scope: ArnScope, machineName: string, executionName: string): string {
  return `arn:aws:states:${scope.region}:${scope.accountId}:execution:${machineName}:${executionName}`;
}

export function expressExecutionArn(scope: ArnScope, machineName: string, executionName: string): string {
  return `arn:aws:states:${scope.region}:${scope.accountId}:express:${machineName}:${executionName}`;
}

/** The parts of a state machine ARN, possibly qualified by a version number or an alias name. */
export interface MachineRef {
  readonly name: string;
  readonly version?: number;
  readonly alias?: string;
}

/** Parses `arn:aws:states:<region>:<account>:stateMachine:<name>[:<version>|:<alias>]`; throws InvalidArn. */
export function parseStateMachineArn(scope: ArnScope, arn: unknown): MachineRef {
  const parts = typeof arn === 'string' ? arn.split(':') : [];
  if (
    parts.length < 7 ||
    parts.length > 8 ||
    parts[0] !== 'arn' ||
    parts[2] !== 'states' ||
    parts[5] !== 'stateMachine' ||
    parts[3] !== scope.region ||
    parts[4] !== scope.accountId
  ) {
    throw new SfnServiceError('InvalidArn', `Invalid Arn: '${String(arn).slice(0, 200)}'`);
  }
  const name = parts[6] ?? '';
  assertValidName(name, 'Arn', 'InvalidArn');
  const qualifier = parts[7];
  if (qualifier === undefined) return { name };
  if (/^[1-9]\d{0,8}$/.test(qualifier)) return { name, version: Number(qualifier) };
  assertValidName(qualifier, 'Arn', 'InvalidArn');
  return { name, alias: qualifier };
}

/** The parts of an execution ARN. */
export interface ExecutionRef {
  readonly machineName: string;
  readonly name: string;
  readonly express: boolean;
}

/** Parses `arn:aws:states:<region>:<account>:execution:<machine>:<name>`; throws InvalidArn. */
export function parseExecutionArn(scope: ArnScope, arn: unknown): ExecutionRef {
  const parts = typeof arn === 'string' ? arn.split(':') : [];
  if (
    parts.length !== 8 ||
    parts[0] !== 'arn' ||
    parts[2] !== 'states' ||
    (parts[5] !== 'execution' && parts[5] !== 'express') ||
    parts[3] !== scope.region ||
    parts[4] !== scope.accountId
  ) {
    throw new SfnServiceError('InvalidArn', `Invalid Arn: '${String(arn).slice(0, 200)}'`);
  }
  const machineName = parts[6] ?? '';
  const name = parts[7] ?? '';
  assertValidName(machineName, 'Arn', 'InvalidArn');
  assertValidName(name, 'Arn', 'InvalidArn');
  return { machineName, name, express: parts[5] === 'express' };
}

export function activityArn(scope: ArnScope, name: string): string {
  return `arn:aws:states:${scope.region}:${scope.accountId}:activity:${name}`;
}

/** Parses `arn:aws:states:<region>:<account>:activity:<name>` and returns the name; throws InvalidArn. */
export function parseActivityArn(scope: ArnScope, arn: unknown): string {
  const parts = typeof arn === 'string' ? arn.split(':') : [];
  if (
    parts.length !== 7 ||
    parts[0] !== 'arn' ||
    parts[2] !== 'states' ||
    parts[5] !== 'activity' ||
    parts[3] !== scope.region ||
    parts[4] !== scope.accountId
  ) {
    throw new SfnServiceError('InvalidArn', `Invalid Arn: '${String(arn).slice(0, 200)}'`);
  }
  const name = parts[6] ?? '';
  assertValidName(name, 'Arn', 'InvalidArn');
  return name;
}
