/**
 * The last states of a top-level machine. `Finalize` (the contract checker's finalize mode)
 * checks the postconditions, writes EXECUTION_COMPLETE {completed, failed, skipped} and says
 * whether the run succeeded: every step completed or legitimately skipped/blocked, every
 * postcondition held, and the journal consistent (a step approved at its gate ran; a blocked step
 * had a dependency that did not complete), else it fails with `Plangate.InconsistentRun`. Runs
 * that stopped early (abort, critical skip, gate timeout) reach it too, with the error, so
 * EXECUTION_COMPLETE is always written; the machine then fails with that error.
 */
import type { Postcondition } from '../plan/schema.ts';
import { MACHINE_ERRORS } from '../runtime/payloads/index.ts';
import { INTERRUPTED_RETRY, SERVICE_RETRY } from './asl.ts';
import { jsonata, toJsonataSource } from './jsonata.ts';
import { Choice, Fail, type Fragment, LambdaInvoke, Succeed } from './states/index.ts';

export interface CompletionProps {
  readonly postconditions: readonly Postcondition[];
  /** Every step id of the plan, so the summary accounts for steps that never ran. */
  readonly stepIds: readonly string[];
  /**
   * Rollback states come before Finalize: a rehearsal checked the postconditions already and
   * passes their outcome as `checked`.
   * @default false
   */
  readonly afterRollback?: boolean;
}

export const COMPLETION_STATES = {
  finalize: 'Finalize',
  outcome: 'Outcome',
  succeeded: 'Run succeeded',
  failed: 'Run failed',
  postconditionFailed: 'Postconditions failed',
} as const;

export class Completion {
  constructor(private readonly props: CompletionProps) {}

  /** The checker's finalize request, from the state input (`{steps}`, or `{error}` after an early stop). */
  request(): string {
    const fixed = `{"kind": "finalize", "plan": $plan, "executionId": $executionId, "context": $context, "secrets": $secrets, "postconditions": ${toJsonataSource(
      this.props.postconditions,
    )}, "stepIds": ${toJsonataSource(this.props.stepIds)}}`;
    return `$merge([${fixed}, $exists($states.input.error) ? {"error": $states.input.error} : {"ledger": {"steps": $states.input.steps}}])`;
  }

  toAsl(): Fragment {
    const s = COMPLETION_STATES;
    const request = this.props.afterRollback
      ? `$merge([${this.request()}, $exists($states.input.checked) ? {"failedPostconditions": $states.input.checked} : {}])`
      : this.request();
    return {
      startAt: s.finalize,
      states: [
        new LambdaInvoke(s.finalize, {
          lambda: 'contractChecker',
          payload: jsonata(request),
          // An inconsistent run (the checker's `error`) fails as a stopped one does.
          output: jsonata(
            '($o := $states.result.Payload; $merge([$states.input, {"outcome": $o}, $exists($o.error) ? {"error": $o.error} : {}]))',
          ),
          // A Finalize cut short by the engine's stop is made again: it answers what it recorded.
          retry: [SERVICE_RETRY, INTERRUPTED_RETRY],
          next: s.outcome,
        }),
        new Choice(s.outcome, {
          choices: [
            { condition: jsonata('$exists($states.input.error)'), next: s.failed },
            { condition: jsonata('$states.input.outcome.succeeded = true'), next: s.succeeded },
          ],
          default: s.postconditionFailed,
        }),
        new Succeed(s.succeeded, { output: jsonata('{"summary": $states.input.outcome.summary}') }),
        new Fail(s.failed, {
          error: jsonata('$states.input.error.Error'),
          cause: jsonata(
            '$exists($states.input.error.Cause) ? $states.input.error.Cause : $states.input.error.Error',
          ),
        }),
        new Fail(s.postconditionFailed, {
          error: MACHINE_ERRORS.postconditionFailed,
          cause: jsonata('$string($states.input.outcome)'),
        }),
      ],
    };
  }
}
