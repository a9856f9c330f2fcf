/**
 * Everything one step compiles to, in order: [Join] → [step gate] → Run (an agent step: Start →
 * Dispatch → Run on a worker) → Check → [Signal] → next; failures go to its scope's shared
 * escalation (Failed → Classify → Decide ↔ Escalate). On a step machine, Run → Check is one
 * call of the step machine, which holds the escalation.
 */
import type { RecoveryTable } from '../plan/recovery.ts';
import type { Step } from '../plan/schema.ts';
import type { BudgetLimits, StepView } from '../runtime/payloads/index.ts';
import { type EscalatedStep, escalationOf, ScopeEscalation } from './escalation.ts';
import type { GateLadderPolicy } from './gate-ladder.ts';
import { JoinSignal, JoinWait, joinSignalState, joinWaitState } from './join.ts';
import type { MachinePlaceholder } from './placeholders.ts';
import { RetryPolicy } from './retry-policy.ts';
import { BranchScope, StateNamer } from './scope.ts';
import type { Size } from './split.ts';
import { type Fragment, type HappyPath, type State, StateGraph } from './states/index.ts';
import { StepGate, stepGateStates } from './step-gate.ts';
import { StepCall, stepCallState } from './step-machine.ts';
import { contractNeeds, runnerNeeds } from './step-reads.ts';
import { StepTask, stepEntryState, stepTaskStates } from './step-task.ts';

export interface PlanStepProps {
  readonly step: Step;
  readonly index: number;
  readonly total: number;
  /** The step's effective recipes (the plan's, with its `onFail` applied). */
  readonly recovery: RecoveryTable;
  /** The approval policy's timeout, for the escalation gate and a human step. */
  readonly approvalTimeoutSeconds: number;
  /** The approval policy's timeout ladder, for the step gate. */
  readonly approvalLadder: GateLadderPolicy;
  readonly inlineOutputLimitBytes: number;
  /**
   * Predecessors on other branches, waited for on a join.
   * @default - none
   */
  readonly joinPredecessors?: readonly string[];
  /**
   * Steps on other branches waiting for this one.
   * @default - none
   */
  readonly signalSuccessors?: readonly string[];
  /**
   * The step's transitive dependencies. Its join signal carries their entries too, so a step
   * after the join can read any of its own transitive dependencies, whatever branch ran them.
   * @default - none
   */
  readonly ancestors?: readonly string[];
  /** Every step id of the plan, to tell step references from other text. */
  readonly stepIds: ReadonlySet<string>;
  /** A step with `requiresApproval`: the step as its gate shows it (approval-view.ts). @default - no step gate */
  readonly gateView?: StepView;
  /** The plan declares recipes of its own: the runner and checker classify with them. @default false */
  readonly sendRecipes?: boolean;
  /** The plan declares secrets: every runner and checker gets the declarations, to redact their values. @default false */
  readonly sendSecretDeclarations?: boolean;
  /** The plan's budget limits, when it declares any. @default - no budget */
  readonly budget?: BudgetLimits;
  /**
   * The step machine that runs this step; only tool steps have one.
   * @default - the step's states are in the plan machine
   */
  readonly stepMachine?: StepMachineRef;
}

/** The step machine a step runs on: the placeholder of its ARN, and the happy path of one execution. */
export interface StepMachineRef {
  readonly placeholder: MachinePlaceholder;
  readonly happyPath: HappyPath;
}

/** What a step costs on the happy path, counted on its rendered states. */
export interface StepCost {
  readonly states: number;
  /** State transitions (what Standard workflows bill), the step machine's included. */
  readonly transitions: number;
  readonly historyEvents: number;
}

/** A step rendered once and measured: its cost, and its size for splitting the plan. */
export interface StepMeasure {
  readonly cost: StepCost;
  readonly size: Size;
}

export class PlanStep {
  constructor(private readonly props: PlanStepProps) {}

  toAsl(scope: BranchScope, next: string | undefined): Fragment {
    const { step } = this.props;
    const signals = this.props.signalSuccessors ?? [];
    const joins = this.props.joinPredecessors ?? [];
    const afterCheck = signals.length > 0 ? joinSignalState(step.id) : next;
    const states: State[] = [...this.body(scope, afterCheck).states];
    if (signals.length > 0) {
      states.push(
        new JoinSignal({ stepId: step.id, successors: signals, carried: this.props.ancestors ?? [], next }),
      );
    }

    let startAt = this.entryState();
    if (step.requiresApproval) {
      const gate = new StepGate({
        stepId: step.id,
        description: step.description,
        dependsOn: step.dependsOn,
        critical: step.critical,
        view: this.props.gateView,
        ladder: this.props.approvalLadder,
        runState: this.entryState(),
      }).toAsl(scope);
      states.push(...gate.states);
      startAt = stepGateStates(step.id).check;
    }
    if (joins.length > 0) {
      states.push(new JoinWait({ stepId: step.id, predecessors: joins, next: startAt }));
      startAt = joinWaitState(step.id);
    }
    return { startAt, states };
  }

  /** The step's runner and checker: a step machine's call, or its own states and its scope's escalation. */
  private body(scope: BranchScope, next: string | undefined): Fragment {
    const { step } = this.props;
    const timeoutSeconds = Math.min(
      step.timeoutSeconds,
      this.props.budget?.wallClockSeconds ?? step.timeoutSeconds,
    );
    if (this.props.stepMachine !== undefined) {
      const call = new StepCall({
        step,
        index: this.props.index,
        machine: this.props.stepMachine.placeholder,
        timeoutSeconds,
        runnerNeeds: runnerNeeds(step, this.props.stepIds),
        checkerNeeds: contractNeeds(step.contract, step.id, this.props.stepIds),
        sendSecretDeclarations: this.props.sendSecretDeclarations ?? false,
        next,
      });
      return { startAt: call.name, states: [call] };
    }
    const recoverState = escalationOf(scope, {
      timeoutSeconds: this.props.approvalTimeoutSeconds,
      budget: this.props.budget,
    }).register(this.escalated());
    return new StepTask({
      step,
      index: this.props.index,
      total: this.props.total,
      retryPolicy: new RetryPolicy({ recovery: this.props.recovery }),
      recoverState,
      inlineOutputLimitBytes: this.props.inlineOutputLimitBytes,
      stepIds: this.props.stepIds,
      approvalTimeoutSeconds: this.props.approvalTimeoutSeconds,
      sendRecipes: this.props.sendRecipes ?? false,
      sendSecretDeclarations: this.props.sendSecretDeclarations ?? false,
      budget: this.props.budget,
    }).toAsl(next);
  }

  /** The state a fresh attempt enters (after a join and a step gate). */
  private entryState(): string {
    return this.props.stepMachine !== undefined
      ? stepCallState(this.props.step.id)
      : stepEntryState(this.props.step);
  }

  /** What this step adds to its scope's shared escalation, in bytes (none on a step machine). */
  private escalationBytes(): number {
    return this.props.stepMachine !== undefined ? 0 : ScopeEscalation.bytesPerStep(this.escalated());
  }

  private escalated(): EscalatedStep {
    const { step } = this.props;
    const task = stepTaskStates(step.id);
    return {
      stepId: step.id,
      description: step.description,
      critical: step.critical,
      index: this.props.index,
      total: this.props.total,
      ...(step.requiresHuman ? { humanTimeoutSeconds: this.props.approvalTimeoutSeconds } : {}),
      onFail: step.onFail,
      runState: stepEntryState(step),
      checkState: task.check,
    };
  }

  /**
   * The step rendered on its own (into a scope of its own, followed by a stand-in state) and
   * measured: its happy path through those states (the Lambdas write the events, so no state
   * exists only to log), and its bytes plus its share of its scope's shared escalation (whose
   * fixed part is in the splitter's per-branch overhead).
   */
  measure(): StepMeasure {
    const graph = StateGraph.of(this.toAsl(new BranchScope(new StateNamer()), 'Next state'));
    const path = graph.happyPath();
    // On a step machine the runner and checker are billed transitions too, in the child's history.
    const machineStates = this.props.stepMachine?.happyPath.states ?? 0;
    const cost = {
      states: path.states,
      transitions: path.states + machineStates,
      historyEvents: path.historyEvents,
    };
    const bytes = Buffer.byteLength(JSON.stringify(graph.renderStates())) + this.escalationBytes();
    return { cost, size: { events: cost.historyEvents, bytes } };
  }
}
