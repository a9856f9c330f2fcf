/**
 * The harness Lambdas the platform deploys: one entry per handler module in lambdas/ (a module
 * exporting `handler`), with the compiler placeholder naming its ARN in compiled definitions.
 * A test checks that every handler module in lambdas/ is listed here, so none is skipped silently.
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
  /**
   * Handlers compiled plans cannot run without are required: synth fails when the module is
   * missing. An optional one is left out (with a synth warning) while its module does not exist.
   */
  readonly required: boolean;
}

export const HARNESS_HANDLERS = {
  gate: {
    file: 'gate.ts',
    description: 'plangate gate: keeps the task token server-side and asks for a decision',
    placeholder: PLACEHOLDERS.gate,
    timeout: Duration.seconds(30),
    memorySize: 512,
    required: true,
  },
  stepRunner: {
    file: 'step-runner.ts',
    description: 'plangate step runner: resolves args and calls the step tool',
    placeholder: PLACEHOLDERS.stepRunner,
    timeout: Duration.minutes(15),
    memorySize: 1024,
    required: true,
  },
  contractChecker: {
    file: 'contract-checker.ts',
    description: 'plangate contract checker: runs the step contract, records evidence, completes the step',
    placeholder: PLACEHOLDERS.contractChecker,
    timeout: Duration.minutes(15),
    memorySize: 1024,
    required: true,
  },
  classifier: {
    file: 'classifier.ts',
    description: 'plangate classifier: classifies a failure and picks the recovery recipe',
    placeholder: PLACEHOLDERS.classifier,
    timeout: Duration.seconds(30),
    memorySize: 512,
    required: true,
  },
  join: {
    file: 'join.ts',
    description: 'plangate join: releases a step once its predecessors on other branches finished',
    placeholder: PLACEHOLDERS.join,
    timeout: Duration.seconds(30),
    memorySize: 512,
    required: true,
  },
  notifier: {
    file: 'notifier.ts',
    description: 'plangate notifier: sends approval requests by email (SES) and Slack',
    timeout: Duration.seconds(30),
    memorySize: 512,
    required: false,
  },
  plansApi: {
    file: 'plans-api.ts',
    description: 'plangate Plans API: validate, compile, deploy and start plans; report on them',
    timeout: Duration.seconds(29),
    memorySize: 1024,
    required: false,
  },
  planner: {
    file: 'planner.ts',
    description:
      'plangate planner: drafts a plan from a goal with a model, validates it, launches it to its gate',
    timeout: Duration.minutes(15),
    memorySize: 1024,
    required: false,
  },
  approvalsApi: {
    file: 'approvals-api.ts',
    description: 'plangate approvals API: the approval page and the answers to gates',
    timeout: Duration.seconds(29),
    memorySize: 512,
    required: false,
  },
} as const satisfies Record<string, HarnessHandlerSpec>;

export type HarnessHandlerName = keyof typeof HARNESS_HANDLERS;

/** The handlers compiled state machines call (each has a placeholder). */
export const STATE_MACHINE_HANDLERS = [
  'gate',
  'stepRunner',
  'contractChecker',
  'classifier',
  'join',
] as const satisfies readonly (keyof typeof PLACEHOLDERS & HarnessHandlerName)[];
export type StateMachineHandlerName = (typeof STATE_MACHINE_HANDLERS)[number];
