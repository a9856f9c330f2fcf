/**
 * The harness Lambdas the platform deploys: one entry per handler module in lambdas/, with the
 * compiler placeholder (lib/runtime/payloads.ts) that names its ARN in compiled definitions.
 * A test checks that every module in lambdas/ is listed here, so none is skipped silently.
 */
import { Duration } from 'aws-cdk-lib';
import { PLACEHOLDERS } from '../compiler/placeholders.ts';

export interface HarnessHandlerSpec {
  /** Module file name in lambdas/. */
  readonly file: string;
  readonly description: string;
  /** `${...}` placeholder compiled definitions use for this function's ARN; absent for the API. */
  readonly placeholder?: string;
  readonly timeout: Duration;
  readonly memorySize: number;
}

export const HARNESS_HANDLERS = {
  gate: {
    file: 'gate.ts',
    description: 'plangate gate: keeps the task token server-side and sends the approval request',
    placeholder: PLACEHOLDERS.gate,
    timeout: Duration.seconds(30),
    memorySize: 512,
  },
  stepRunner: {
    file: 'step-runner.ts',
    description: 'plangate step runner: resolves args and calls the step tool',
    placeholder: PLACEHOLDERS.stepRunner,
    timeout: Duration.minutes(15),
    memorySize: 1024,
  },
  contractChecker: {
    file: 'contract-checker.ts',
    description: 'plangate contract checker: runs the step contract, records evidence, completes the step',
    placeholder: PLACEHOLDERS.contractChecker,
    timeout: Duration.minutes(15),
    memorySize: 1024,
  },
  classifier: {
    file: 'classifier.ts',
    description: 'plangate classifier: classifies a failure and picks the recovery recipe',
    placeholder: PLACEHOLDERS.classifier,
    timeout: Duration.seconds(30),
    memorySize: 512,
  },
  join: {
    file: 'join.ts',
    description: 'plangate join: releases a step once its predecessors on other branches finished',
    placeholder: PLACEHOLDERS.join,
    timeout: Duration.seconds(30),
    memorySize: 512,
  },
  api: {
    file: 'api.ts',
    description: 'plangate Plans API: submit and launch plans, answer approvals',
    timeout: Duration.seconds(29),
    memorySize: 1024,
  },
} as const satisfies Record<string, HarnessHandlerSpec>;

export type HarnessHandlerName = keyof typeof HARNESS_HANDLERS;

/** The handlers compiled state machines call (each has a placeholder); the API is called by people. */
export const STATE_MACHINE_HANDLERS = [
  'gate',
  'stepRunner',
  'contractChecker',
  'classifier',
  'join',
] as const satisfies readonly (keyof typeof PLACEHOLDERS & HarnessHandlerName)[];
