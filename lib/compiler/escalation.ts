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
 * A step machine has the same states for its one step, whose facts come with its input.
 */
import type { RecoveryRecipe } from '../plan/schema.ts';
import type { BudgetLimits } from '../runtime/payloads/index.ts';
import { SERVICE_RETRY } from './asl.ts';
import { CURRENT, type RunValues, STEPS, WORKFLOW_VARIABLES } from './dataflow.ts';
import { GateTask } from './gate-task.ts';
import { jsonata, quote, toJsonataSource } from './jsonata.ts';
import type { BranchScope } from './scope.ts';
import { Choice, type ChoiceRule, LambdaInvoke, Pass, renderChoiceRule, type State } from './states/index.ts';

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
  /**
   * The plan's budget: the classifier escalates (once, as BUDGET_EXCEEDED) a worker's failed
   * attempt that used it up instead of retrying it. @default - no budget
   */
  readonly budget?: BudgetLimits;
}

/** The escalation of a step machine, which runs one step whose facts come with its input. */
export interface SingleStepEscalationProps extends ScopeEscalationProps {
  /** JSONata for the step's facts (`critical`, `description`, `index`, `total`, `onFail`). */
  readonly facts: string;
  /** Where the requests read the run-wide values. */
  readonly values: RunValues;
  readonly runState: string;
  readonly checkState: string;
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

/**
 * What the shared states know of a step, by id: the classifier's request takes all of it (it
 * ignores `critical`), the escalation gate and the decision read `description` and `critical`.
 */
function stepFacts(step: EscalatedStep) {
  return {
    critical: step.critical,
    description: step.description,
    index: step.index,
    total: step.total,
    humanTimeoutSeconds: step.humanTimeoutSeconds,
    onFail: step.onFail,
  };
}

export class ScopeEscalation {
  private readonly steps: EscalatedStep[] = [];
  private readonly names: {
    failed: string;
    classify: string;
    escalate: string;
    decide: string;
    retry: string;
    skip: string;
  };

  constructor(
    private readonly scope: BranchScope,
    private readonly props: ScopeEscalationProps,
    /** A step machine's one step, whose facts come with its input. @default - steps registered */
    private readonly single?: SingleStepEscalationProps,
  ) {
    const n = scope.id;
    this.names = {
      failed: `Failed ${n}`,
      classify: `Classify ${n}`,
      escalate: `Escalate ${n}`,
      decide: `Decide ${n}`,
      retry: `Retry ${n}`,
      skip: `Skip ${n}`,
    };
  }

  /** The escalation of a step machine's one step; returns the state its Catch blocks go to. */
  static forStepMachine(scope: BranchScope, props: SingleStepEscalationProps): string {
    const escalation = new ScopeEscalation(scope, props, props);
    scope.addShared(() => escalation.states());
    return escalation.names.failed;
  }

  /** Adds a step; returns the state its Catch blocks go to. */
  register(step: EscalatedStep): string {
    this.steps.push(step);
    return this.names.failed;
  }

  /** What one step adds to the shared states, in bytes (for sizing machines before they are built). */
  static bytesPerStep(step: EscalatedStep): number {
    const facts = toJsonataSource({ [step.stepId]: stepFacts(step) });
    const rule = JSON.stringify(renderChoiceRule(routeRule(step.stepId, `Check ${step.stepId}`)));
    return facts.length + (step.critical ? 1 : 2) * rule.length;
  }

  /**
   * The shared states for the steps registered: `Failed` looks the step's facts up, `Classify`
   * names the failure, `Decide` routes: a classifier RETRY or a decided RETRY → the step again
   * (attempt + 1), a decided SKIP → the step's checker (non-critical) or the Fail state, any
   * other decision → the Fail state, no decision yet → `Escalate`, whose answer comes back here.
   */
  states(): State[] {
    const names = this.names;
    const single = this.single;
    const values = single?.values ?? WORKFLOW_VARIABLES;
    const facts =
      single?.facts ??
      `$lookup(${toJsonataSource(Object.fromEntries(this.steps.map((s) => [s.stepId, stepFacts(s)])))}, $c.stepId)`;
    // A step machine's step may be critical or not: its facts say so at run time.
    const skippable = single !== undefined || this.steps.some((s) => !s.critical);
    const nonCritical = this.steps.filter((s) => !s.critical);
    const only = single ?? (this.steps.length === 1 ? this.steps[0] : undefined);
    const retryTarget = only ? only.runState : names.retry;
    const skipTarget = only ? only.checkState : names.skip;
    const stop = this.scope.fail();
    const bound = (expression: string) => jsonata(`($c := ${CURRENT}; ${expression})`);
    const keep = (current: string) => `{"steps": ${STEPS}, "current": ${current}}`;
    const retrying = '($c.failure.action = "RETRY" or $c.decision = "RETRY")';
    const skipping = '($c.decision = "SKIP" and $not($c.step.critical))';
    const nextAttempt = keep(
      '{"stepId": $c.stepId, "attempt": $c.attempt + 1, "gate": $c.gate, "retryOf": {"error": $c.error, "evidence": $c.run.evidence}}',
    );
    const skipped = keep(
      '{"stepId": $c.stepId, "attempt": $c.attempt, "run": {"stepId": $c.stepId, "status": "skipped", "attempt": $c.attempt, "durationMs": 0}}',
    );
    const route = (name: string, target: (s: EscalatedStep) => string, steps: readonly EscalatedStep[]) =>
      new Choice(name, {
        choices: steps.map((s) => routeRule(s.stepId, target(s))),
        default: stop,
      });
    const shared: State[] = [
      // The failed step's facts, looked up once: the classifier's request and the escalation read them.
      new Pass(names.failed, {
        output: bound(keep(`$merge([$c, {"step": ${facts}}])`)),
        next: names.classify,
      }),
      new LambdaInvoke(names.classify, {
        lambda: 'classifier',
        payload: bound(
          `$merge([{"plan": ${values.plan}, "executionId": ${values.executionId}, "stepId": $c.stepId, "phase": $c.phase, "error": $c.error, "attempt": $c.attempt, "recovery": ${values.recovery}${this.props.budget ? `, "budget": ${toJsonataSource(this.props.budget)}` : ''}}, $c.step])`,
        ),
        output: bound(keep('$merge([$c, {"failure": $states.result.Payload}])')),
        retry: [SERVICE_RETRY],
        next: names.decide,
      }),
      new Choice(names.decide, {
        choices: [
          { condition: bound(retrying), next: retryTarget },
          ...(skippable ? [{ condition: bound(skipping), next: skipTarget }] : []),
          // A SKIP of a critical step, ABORT, and anything that is not a decision: stop.
          { condition: bound('$exists($c.decision)'), next: stop },
        ],
        default: names.escalate,
        output: bound(
          `${retrying} ? ${nextAttempt} : ${skippable ? `${skipping} ? ${skipped} : ` : ''}$states.input`,
        ),
      }),
      new GateTask(names.escalate, {
        kind: 'escalation',
        payload:
          '{"stepId": $c.stepId, "description": $c.step.description, "round": $c.attempt, "failure": $c.failure, "attempt": $c.attempt, "critical": $c.step.critical, "policy": $c.failure.policy}',
        timeoutSeconds: this.props.timeoutSeconds,
        values,
        // A gate answer without a decision counts as ABORT: it fails closed.
        output: bound(keep('$merge([$c, {"decision": [$states.result.decision, "ABORT"][0]}])')),
        catch: [
          {
            errorEquals: ['States.Timeout'],
            output: bound(keep('$merge([$c, {"gate": "escalation"}])')),
            next: stop,
          },
        ],
        next: names.decide,
      }),
    ];
    // A scope of one step needs no routers: its answers go straight to that step.
    if (!only) shared.push(route(names.retry, (s) => s.runState, this.steps));
    if (!only && nonCritical.length > 0) shared.push(route(names.skip, (s) => s.checkState, nonCritical));
    return shared;
  }
}

/** The router's rule sending the failed step `stepId` to `next`. */
function routeRule(stepId: string, next: string): ChoiceRule {
  return { condition: jsonata(`${CURRENT}.stepId = ${quote(stepId)}`), next };
}
