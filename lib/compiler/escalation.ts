/**
 * What happens after a step's Retry blocks gave up, shared by every step of a branch scope (a
 * Choice can only jump within its own branch, so one set per scope): the classifier names the
 * failure and either loops the whole step (runner → checker) again, or escalates. The escalation
 * gate asks a person (or applies the recipe's `skip`/`abort` itself) and a Choice routes the
 * answer: RETRY → the step's runner again (attempt + 1); SKIP → the step's checker records it
 * `skipped` (its dependents will be `blocked`), or, for a critical step, Fail
 * `Plangate.CriticalStepSkipped`; ABORT → Fail `Plangate.Aborted`.
 *
 * A step's Catch puts its id in `current.stepId`; the per-step facts (critical, description, its
 * own `on_fail`) are literals of the shared states, looked up by that id, and two routers (`Retry`,
 * `Skip`) hold one rule per step. A step thus costs a few dozen bytes here instead of four states.
 */
import type { RecoveryRecipe } from '../plan/schema.ts';
import type { AslStates } from './asl.ts';
import { LAMBDA_INVOKE, SERVICE_RETRY } from './asl.ts';
import { CURRENT, mergeCurrent, nextAttempt, withCurrent } from './dataflow.ts';
import { gateTask } from './gate-task.ts';
import { jsonata, quote, toJsonataSource } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';
import type { BranchScope } from './scope.ts';

export interface EscalatedStep {
  readonly stepId: string;
  readonly description: string;
  readonly critical: boolean;
  /** 1-based position in the plan and the plan's step count, for the classifier's "[Task N/M]" line. */
  readonly index: number;
  readonly total: number;
  /**
   * A human step's gate timeout: the classifier escalates its timeout (nobody answered) instead
   * of treating it as transient. @default - not a human step
   */
  readonly humanTimeoutSeconds?: number;
  /** The step's own `on_fail`. @default - the recipes decide */
  readonly onFail?: { readonly retries: number; readonly escalation: RecoveryRecipe['escalation'] };
  /** Where RETRY goes (the runner, or a human step's gate). */
  readonly runState: string;
  /** Where a non-critical SKIP goes (the checker records `skipped`). */
  readonly checkState: string;
}

export interface ScopeEscalationProps {
  /** The approval policy's timeout, used for the escalation gate. */
  readonly timeoutSeconds: number;
}

/** The shared escalation of `scope`, created on first use; its states live in `scope.sharedStates`. */
export function escalationOf(scope: BranchScope, props: ScopeEscalationProps): ScopeEscalation {
  let escalation = registry.get(scope);
  if (!escalation) {
    const created = new ScopeEscalation(scope, props);
    scope.addShared(() => created.states());
    registry.set(scope, created);
    escalation = created;
  }
  return escalation;
}

const registry = new WeakMap<BranchScope, ScopeEscalation>();

/** What the shared states know of a step, by id. */
function stepFacts(step: EscalatedStep) {
  return {
    critical: step.critical,
    description: step.description,
    index: step.index,
    total: step.total,
    ...(step.humanTimeoutSeconds !== undefined ? { humanTimeoutSeconds: step.humanTimeoutSeconds } : {}),
  };
}

export class ScopeEscalation {
  private readonly steps: EscalatedStep[] = [];
  private readonly names: {
    failed: string;
    classify: string;
    triage: string;
    escalate: string;
    decide: string;
    retry: string;
    skip: string;
  };

  constructor(
    private readonly scope: BranchScope,
    private readonly props: ScopeEscalationProps,
  ) {
    const n = scope.id;
    this.names = {
      failed: `Failed ${n}`,
      classify: `Classify ${n}`,
      triage: `Triage ${n}`,
      escalate: `Escalate ${n}`,
      decide: `Decide ${n}`,
      retry: `Retry ${n}`,
      skip: `Skip ${n}`,
    };
  }

  /** Adds a step; returns the state its Catch blocks go to. */
  register(step: EscalatedStep): string {
    this.steps.push(step);
    return this.names.failed;
  }

  /** What one step adds to the shared states, in bytes (for sizing machines before they are built). */
  static bytesPerStep(step: EscalatedStep): number {
    const facts = JSON.stringify({ [step.stepId]: stepFacts(step) });
    const onFail = step.onFail ? JSON.stringify({ [step.stepId]: { onFail: step.onFail } }) : '';
    const rule = JSON.stringify({
      Condition: jsonata(`${CURRENT}.stepId = ${quote(step.stepId)}`),
      Next: `Check ${step.stepId}`,
    });
    return facts.length + onFail.length + (step.critical ? 1 : 2) * rule.length;
  }

  /** The shared states for the steps registered. */
  states(): AslStates {
    const names = this.names;
    const decision = `${CURRENT}.decision`;
    const facts = Object.fromEntries(this.steps.map((s) => [s.stepId, stepFacts(s)]));
    const onFail = Object.fromEntries(
      this.steps.flatMap((s) => (s.onFail ? [[s.stepId, { onFail: s.onFail }]] : [])),
    );
    const nonCritical = this.steps.filter((s) => !s.critical);
    const only = this.steps.length === 1 ? this.steps[0] : undefined;
    const retryTarget = only ? only.runState : names.retry;
    const skipTarget = only ? only.checkState : names.skip;
    const skipped = withCurrent(
      `{"stepId": ${CURRENT}.stepId, "attempt": ${CURRENT}.attempt, "run": {"stepId": ${CURRENT}.stepId, "status": "skipped", "attempt": ${CURRENT}.attempt, "durationMs": 0}}`,
    );
    const route = (target: (s: EscalatedStep) => string, steps: readonly EscalatedStep[]) => ({
      Type: 'Choice',
      Choices: steps.map((s) => ({
        Condition: jsonata(`${CURRENT}.stepId = ${quote(s.stepId)}`),
        Next: target(s),
      })),
      Default: this.scope.fail('aborted'),
    });
    const request = `$merge([{"plan": $plan, "executionId": $executionId, "stepId": ${CURRENT}.stepId, "phase": ${CURRENT}.phase, "error": ${CURRENT}.error, "attempt": ${CURRENT}.attempt, "recovery": $recovery}, $sift(${CURRENT}.step, function($v, $k) { $k in ["description", "index", "total", "humanTimeoutSeconds"] })])`;
    const shared: AslStates = {
      // The failed step's facts, looked up once: the classifier's request and the escalation read them.
      [names.failed]: {
        Type: 'Pass',
        Output: jsonata(mergeCurrent(`{"step": $lookup(${toJsonataSource(facts)}, ${CURRENT}.stepId)}`)),
        Next: names.classify,
      },
      [names.classify]: {
        Type: 'Task',
        Resource: LAMBDA_INVOKE,
        Arguments: {
          FunctionName: ref(PLACEHOLDERS.classifier),
          Payload: jsonata(
            Object.keys(onFail).length > 0
              ? `$merge([${request}, $lookup(${toJsonataSource(onFail)}, ${CURRENT}.stepId)])`
              : request,
          ),
        },
        Output: jsonata(mergeCurrent('{"failure": $states.result.Payload}')),
        Retry: [SERVICE_RETRY],
        Next: names.triage,
      },
      [names.triage]: {
        Type: 'Choice',
        Choices: [{ Condition: jsonata(`${CURRENT}.failure.action = "RETRY"`), Next: retryTarget }],
        Default: names.escalate,
        Output: jsonata(`${CURRENT}.failure.action = "RETRY" ? ${nextAttempt()} : $states.input`),
      },
      [names.escalate]: gateTask({
        kind: 'escalation',
        payload: {
          stepId: jsonata(`${CURRENT}.stepId`),
          description: jsonata(`${CURRENT}.step.description`),
          round: jsonata(`${CURRENT}.attempt`),
          failure: jsonata(`${CURRENT}.failure`),
          attempt: jsonata(`${CURRENT}.attempt`),
          critical: jsonata(`${CURRENT}.step.critical`),
          policy: jsonata(`${CURRENT}.failure.policy`),
        },
        timeoutSeconds: this.props.timeoutSeconds,
        rest: {
          Output: jsonata(mergeCurrent('{"decision": $states.result.decision}')),
          Catch: [
            {
              ErrorEquals: ['States.Timeout'],
              Output: jsonata(mergeCurrent('{"gate": "escalation"}')),
              Next: this.scope.fail('gateTimedOut'),
            },
          ],
          Next: names.decide,
        },
      }),
      [names.decide]: {
        Type: 'Choice',
        Choices: [
          { Condition: jsonata(`${decision} = "RETRY"`), Next: retryTarget },
          ...(nonCritical.length > 0
            ? [
                {
                  Condition: jsonata(`${decision} = "SKIP" and ${CURRENT}.step.critical`),
                  Next: this.scope.fail('criticalStepSkipped'),
                },
                { Condition: jsonata(`${decision} = "SKIP"`), Next: skipTarget },
              ]
            : [{ Condition: jsonata(`${decision} = "SKIP"`), Next: this.scope.fail('criticalStepSkipped') }]),
        ],
        // ABORT, and anything that is not a decision: stop.
        Default: this.scope.fail('aborted'),
        Output: jsonata(
          nonCritical.length > 0
            ? `${decision} = "RETRY" ? ${nextAttempt()} : (${decision} = "SKIP" and $not(${CURRENT}.step.critical)) ? ${skipped} : $states.input`
            : `${decision} = "RETRY" ? ${nextAttempt()} : $states.input`,
        ),
      },
    };
    // A scope of one step needs no routers: its answers go straight to that step.
    if (!only) shared[names.retry] = route((s) => s.runState, this.steps);
    if (!only && nonCritical.length > 0) shared[names.skip] = route((s) => s.checkState, nonCritical);
    return shared;
  }
}
