/**
 * Rollback (seed 003), between Execute and Finalize in machines of plans that declare any
 * `rollback`. An abort (a person's or a recipe's, a budget abort included) undoes the completed
 * steps; with `{"rehearseRollback": true}` as execution input a successful run checks its
 * postconditions first and then undoes its steps, to prove the procedures work.
 *
 * `Roll back` (step runner, rollback mode) does the most recently completed step's procedure
 * that has not run (the journal knows the completion order, across branches and child machines)
 * or answers `done`; `Check rollback` (contract checker) proves it with the procedure's own
 * contract. The loop ends when nothing is left or a rollback failed; a failed rehearsal ends
 * the run with `Plangate.RollbackFailed`, a failed undo after an abort keeps the abort's error.
 *
 * An attempt cut short by the engine's stop (kill -9, then `plangate resume`) is retried as the
 * transient recipe retries an interrupted step: the runner sees the rollback started and never
 * ended and answers `interrupted`; the checker then asks the procedure's contract, which either
 * proves the undo done or has it run again (`rerun`). Once the retries are spent, `Rollback
 * stopped` records ROLLBACK_FAILED with the error, so the run still ends with its events.
 */
import type { Contract, Step } from '../plan/schema.ts';
import { MACHINE_ERRORS } from '../runtime/payloads/index.ts';
import type { AslRetrier } from './asl.ts';
import { SERVICE_RETRY } from './asl.ts';
import { EXECUTION_SCOPE } from './dataflow.ts';
import { jsonata, literal, quote, toJsonataSource } from './jsonata.ts';
import { type Catcher, Choice, type Fragment, LambdaInvoke, Pass } from './states/index.ts';

export interface RollbackProps {
  /** The plan's steps; those with a `rollback` get undone. */
  readonly steps: readonly Step[];
  /** The contract checker's request for the run's postconditions (`kind` is set here). */
  readonly postconditionsRequest: string;
  /** Where the loop ends: Finalize. */
  readonly next: string;
  /** How an attempt the engine's stop cut short is retried (RetryPolicy.interrupted). */
  readonly interruptedRetry: readonly AslRetrier[];
}

export const ROLLBACK_STATES = {
  entry: 'Roll back?',
  postconditions: 'Check postconditions',
  run: 'Roll back',
  ran: 'Rolled back?',
  check: 'Check rollback',
  verified: 'Rollback verified?',
  failed: 'Rollback failed',
  stopped: 'Rollback stopped',
} as const;

const ABORTED = MACHINE_ERRORS.aborted;

export class Rollback {
  constructor(private readonly props: RollbackProps) {}

  /** Whether the plan needs these states at all. */
  static applies(steps: readonly Step[]): boolean {
    return steps.some((s) => s.rollback !== undefined);
  }

  toAsl(): Fragment {
    const s = ROLLBACK_STATES;
    const withRollback = this.props.steps.filter((step) => step.rollback);
    const procedures = Object.fromEntries(
      withRollback.map((step) => [
        step.id,
        {
          tool: step.rollback?.tool,
          args: step.rollback?.args,
          description: step.description,
          timeoutSeconds: step.timeoutSeconds,
          ...(step.aws !== undefined ? { aws: step.aws } : {}),
          ...(step.network !== undefined ? { network: step.network } : {}),
        },
      ]),
    );
    const contracts: Record<string, Contract> = {};
    for (const step of withRollback) if (step.rollback?.contract) contracts[step.id] = step.rollback.contract;
    const error = '$states.input.error';
    // A stop inside a child machine surfaces as States.TaskFailed with the child's error in its cause.
    const aborted = `$exists(${error}) and (${error}.Error = ${quote(ABORTED)} or ($exists(${error}.Cause) and $contains(${error}.Cause, ${quote(ABORTED)})))`;
    const rehearsal = `$not($exists(${error}))`;
    const common = {
      kind: 'rollback',
      ...EXECUTION_SCOPE,
      context: jsonata('$context'),
      secrets: jsonata('$secrets'),
      rehearsal: jsonata(rehearsal),
    };
    const stepId = '$states.input.rollback.stepId';
    const retry = [SERVICE_RETRY, ...this.props.interruptedRetry];
    const stop: Catcher[] = [
      {
        errorEquals: ['States.ALL'],
        output: jsonata('$merge([$states.input, {"rollbackError": $states.errorOutput}])'),
        next: s.stopped,
      },
    ];
    return {
      startAt: s.entry,
      states: [
        new Choice(s.entry, {
          choices: [
            { condition: jsonata(aborted), next: s.run },
            {
              condition: jsonata(`${rehearsal} and $states.context.Execution.Input.rehearseRollback = true`),
              next: s.postconditions,
            },
          ],
          default: this.props.next,
        }),
        new LambdaInvoke(s.postconditions, {
          comment: 'Before the rehearsal undoes the work, the postconditions check what it did.',
          lambda: 'contractChecker',
          payload: jsonata(`$merge([${this.props.postconditionsRequest}, {"kind": "postconditions"}])`),
          output: jsonata(
            '$merge([$states.input, {"checked": $states.result.Payload.failedPostconditions}])',
          ),
          retry: [SERVICE_RETRY],
          next: s.run,
        }),
        new LambdaInvoke(s.run, {
          lambda: 'stepRunner',
          payload: {
            ...common,
            procedures: literal(procedures),
            rerunAfter: jsonata(
              '$states.input.rollback.status = "rerun" ? $states.input.rollback.startedSeq : null',
            ),
          },
          output: jsonata('$merge([$states.input, {"rollback": $states.result.Payload}])'),
          retry,
          catch: stop,
          next: s.ran,
        }),
        new Choice(s.ran, {
          choices: [
            { condition: jsonata('$states.input.rollback.status = "done"'), next: this.props.next },
            { condition: jsonata('$states.input.rollback.status = "failed"'), next: s.failed },
          ],
          default: s.check,
        }),
        new LambdaInvoke(s.check, {
          lambda: 'contractChecker',
          payload: jsonata(
            `$merge([${toJsonataSource({ kind: 'rollback' })}, {"plan": $plan, "executionId": $executionId, "stepId": ${stepId}, "description": $lookup(${toJsonataSource(
              Object.fromEntries(withRollback.map((step) => [step.id, step.description])),
            )}, ${stepId}), "output": $states.input.rollback.output, "context": $context, "secrets": $secrets, "rehearsal": ${rehearsal}, "interrupted": $states.input.rollback.status = "interrupted"}, $exists($lookup(${toJsonataSource(contracts)}, ${stepId})) ? {"contract": $lookup(${toJsonataSource(contracts)}, ${stepId})} : {}])`,
          ),
          output: jsonata('$merge([$states.input, {"rollback": $states.result.Payload}])'),
          retry,
          catch: stop,
          next: s.verified,
        }),
        new Choice(s.verified, {
          choices: [
            {
              condition: jsonata('$states.input.rollback.status in ["completed", "rerun"]'),
              next: s.run,
            },
          ],
          default: s.failed,
        }),
        new LambdaInvoke(s.stopped, {
          comment: 'The rollback under way failed more often than its recipe retries: ROLLBACK_FAILED.',
          lambda: 'stepRunner',
          payload: {
            ...common,
            procedures: literal(procedures),
            stopped: jsonata('$states.input.rollbackError'),
          },
          output: jsonata(
            '$merge([$sift($states.input, function($v, $k) { $k != "rollbackError" }), {"rollback": $states.result.Payload}])',
          ),
          retry: [SERVICE_RETRY],
          next: s.ran,
        }),
        new Pass(s.failed, {
          output: jsonata(
            `$exists(${error}) ? $states.input : {"error": {"Error": ${quote(MACHINE_ERRORS.rollbackFailed)}, "Cause": "a rehearsed rollback failed; see ROLLBACK_FAILED"}}`,
          ),
          next: this.props.next,
        }),
      ],
    };
  }
}
