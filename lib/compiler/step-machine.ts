/**
 * A step machine: one state machine that runs any tool step of a plan, the runner and the
 * checker with their Retry blocks and the step's escalation, started by the plan machine with
 * the step as its input (`states:startExecution.sync:2`). The retry, catch and escalation
 * logic is written once per plan instead of once per step: a step costs its parent one Task
 * state holding its own data (args, contract, description, …) and nothing else. Steps whose
 * recipes give different Retry blocks get different step machines.
 *
 * The step's data travels as a literal of the parent's definition (bound to the approved
 * digest like everything else) and is read in the child as `$states.context.Execution.Input`,
 * which no state can change. The child returns the step's ledger entry; a stop (ABORT, a
 * critical SKIP, a gate that timed out) fails the child with the same Error and Cause as the
 * inline states would; it stops the parent's branches like theirs, and Execute's Catch reads
 * the child's Error and Cause out of the `States.TaskFailed` it arrives as.
 *
 * Human steps (a gate where the runner would be) and agent steps (an activity per target) keep
 * their states in the plan machine (step-task.ts).
 */
import { RUNNER_MARGIN_SECONDS } from '../plan/function-limits.ts';
import type { Step } from '../plan/schema.ts';
import type { BudgetLimits, PlanIdentity, RecipeSummary } from '../runtime/payloads/index.ts';
import type { AslRetrier, AslState } from './asl.ts';
import { START_EXECUTION_RETRY, START_EXECUTION_SYNC } from './asl.ts';
import { ATTEMPT, CURRENT, entriesOf, mergeCurrent, RUN_ATTEMPT, type RunValues, STEPS } from './dataflow.ts';
import { ScopeEscalation } from './escalation.ts';
import { jsonata, literal, toJsonataSource } from './jsonata.ts';
import type { MachinePlaceholder } from './placeholders.ts';
import { BranchScope, StateNamer } from './scope.ts';
import { type Catcher, LambdaInvoke, type NextProps, StartExecution, StateGraph } from './states/index.ts';
import { stepGateRejection } from './step-gate.ts';
import type { DataNeeds } from './step-reads.ts';

/** The step as the child reads it: `$states.context.Execution.Input`. */
const INPUT = '$states.context.Execution.Input';

/** The ledger entry fields the checker's answer contributes (evidence stays in the journal). */
const ENTRY_FIELDS = '["status", "output", "outputRef"]';

/** The facts the escalation reads of the step. */
const FACT_FIELDS = '["critical", "description", "index", "total", "onFail"]';

export const STEP_MACHINE_STATES = { run: 'Run', check: 'Check' } as const;

export interface StepMachineProps {
  readonly plan: PlanIdentity;
  /** The Retry blocks of both tasks (the recipes of the steps this machine runs). */
  readonly retry: readonly AslRetrier[];
  /** What the classifier needs of each recipe. */
  readonly recovery: Readonly<Record<string, RecipeSummary>>;
  /** The approval policy, sent with the escalation gate. */
  readonly approval: unknown;
  /** The approval policy's timeout, for the escalation gate. */
  readonly approvalTimeoutSeconds: number;
  readonly inlineOutputLimitBytes: number;
  /** The plan's step count, for "[Task N/M]". */
  readonly total: number;
  /** Send the recipes to the runner and checker (the plan declares its own). @default false */
  readonly sendRecipes?: boolean;
  /** The plan's budget limits, sent to the runner. @default - no budget */
  readonly budget?: BudgetLimits;
}

/** The definition of a step machine. */
export class StepMachine {
  constructor(private readonly props: StepMachineProps) {}

  /** The machine's states: Run → Check, and the step's escalation. */
  graph(): StateGraph {
    const props = this.props;
    const names = STEP_MACHINE_STATES;
    const scope = new BranchScope(new StateNamer());
    const values: RunValues = {
      plan: toJsonataSource(props.plan),
      executionId: `${INPUT}.executionId`,
      recovery: toJsonataSource(props.recovery),
      approval: toJsonataSource(props.approval),
    };
    // What the step data leaves out: the plan's step count, and `critical` when true.
    const defaults = `{"critical": true, "total": ${props.total}}`;
    const failed = ScopeEscalation.forStepMachine(scope, {
      timeoutSeconds: props.approvalTimeoutSeconds,
      facts: `$merge([${defaults}, $sift(${INPUT}.step, function($v, $k) { $k in ${FACT_FIELDS} })])`,
      values,
      runState: names.run,
      checkState: names.check,
    });
    const recovery = props.sendRecipes ? `, "recovery": ${values.recovery}` : '';
    const catchInto = (phase: 'run' | 'check'): Catcher[] => [
      {
        errorEquals: ['States.ALL'],
        output: jsonata(
          mergeCurrent(
            `{"stepId": ${INPUT}.step.stepId, "attempt": ${phase === 'run' ? RUN_ATTEMPT : ATTEMPT}, "phase": "${phase}", "error": $states.errorOutput}`,
          ),
        ),
        next: failed,
      },
    ];
    const graph = new StateGraph(names.run, [
      new LambdaInvoke(names.run, {
        lambda: 'stepRunner',
        // The step's data and what the parent resolved for the runner (inputs, context), with
        // the approver's and the step gate's overrides and decisions (RunnerRequest).
        payload: jsonata(
          `($i := ${INPUT}; $merge([$i.step, {"inputs": {}, "total": ${props.total}}, $i.run, {"plan": ${values.plan}, "executionId": $i.executionId, "argOverrides": $merge([{}, $lookup($i.mods.argOverrides, $i.step.stepId), $lookup($i.gate.argOverrides, $i.step.stepId)]), "skip": ($i.step.stepId in $i.mods.skipSteps) or $i.gate.decision = "REJECT", "rejection": ${stepGateRejection('$i.gate')}, "attempt": ${RUN_ATTEMPT}, "inlineOutputLimitBytes": ${props.inlineOutputLimitBytes}${recovery}${props.budget ? `, "budget": ${toJsonataSource(props.budget)}` : ''}}]))`,
        ),
        // The runner's margin beyond its tool's timeout (RUNNER_MARGIN_SECONDS in lib/plan/function-limits.ts).
        timeoutSeconds: jsonata(`${INPUT}.step.timeoutSeconds + ${RUNNER_MARGIN_SECONDS}`),
        output: jsonata(
          mergeCurrent('{"attempt": $states.result.Payload.attempt, "run": $states.result.Payload}'),
        ),
        retry: props.retry,
        catch: catchInto('run'),
        next: names.check,
      }),
      new LambdaInvoke(names.check, {
        lambda: 'contractChecker',
        payload: jsonata(
          `($i := ${INPUT}; $merge([$i.step, {"total": ${props.total}}, $i.check, {"plan": ${values.plan}, "executionId": $i.executionId, "run": ${CURRENT}.run, "attempt": ${ATTEMPT}, "checkRetries": $states.context.State.RetryCount${recovery}}]))`,
        ),
        // The step's ledger entry, keyed by its id: the parent merges it as it is.
        output: jsonata(
          `{${INPUT}.step.stepId: $sift($states.result.Payload, function($v, $k) { $k in ${ENTRY_FIELDS} })}`,
        ),
        retry: props.retry,
        catch: catchInto('check'),
      }),
    ]);
    return graph.addAll(scope.sharedStates);
  }
}

export interface StepCallProps extends NextProps {
  readonly step: Step;
  readonly index: number;
  /** The step machine's placeholder (`StepStateMachineArn<n>`). */
  readonly machine: MachinePlaceholder;
  /** The step's limit, at most the plan's wall-clock budget. */
  readonly timeoutSeconds: number;
  /** What the runner reads besides the step: dependencies and named steps' entries, plan data. */
  readonly runnerNeeds: DataNeeds;
  /** What the checker reads: the entries and plan data its contract names. */
  readonly checkerNeeds: DataNeeds;
  /** The plan declares secrets: both Lambdas get the declarations, to redact their values. */
  readonly sendSecretDeclarations: boolean;
}

export const stepCallState = (stepId: string) => `Step ${stepId}`;

/** The plan machine's Task that runs one step on its step machine and records its entry. */
export class StepCall extends StartExecution {
  constructor(props: StepCallProps) {
    const { step } = props;
    const data = {
      stepId: step.id,
      index: props.index,
      description: step.description,
      tool: step.tool,
      target: step.target,
      task: step.task,
      ...(step.subscriptions.length > 0 ? { subscriptions: step.subscriptions } : {}),
      args: step.args,
      ...(step.dependsOn.length > 0 ? { dependsOn: step.dependsOn } : {}),
      ...(step.outputs.length > 0 ? { outputs: step.outputs } : {}),
      timeoutSeconds: props.timeoutSeconds,
      contract: step.contract,
      ...(step.aws !== undefined ? { aws: step.aws } : {}),
      ...(step.network !== undefined ? { network: step.network } : {}),
      ...(step.critical ? {} : { critical: false }),
      onFail: step.onFail,
    };
    const reads = (needs: DataNeeds, entries: readonly string[]) =>
      [
        ...(entries.length > 0 ? [`"inputs": ${entriesOf(entries)}`] : []),
        ...(needs.context ? ['"context": $context'] : []),
        ...(needs.secrets || props.sendSecretDeclarations ? ['"secrets": $secrets'] : []),
      ].join(', ');
    const runner = reads(props.runnerNeeds, union(step.dependsOn, props.runnerNeeds.steps));
    const checker = reads(props.checkerNeeds, props.checkerNeeds.steps);
    super(stepCallState(step.id), {
      stateMachine: props.machine,
      input: {
        step: literal(data),
        executionId: jsonata('$executionId'),
        mods: jsonata('$mods'),
        ...(runner ? { run: jsonata(`{${runner}}`) } : {}),
        ...(checker ? { check: jsonata(`{${checker}}`) } : {}),
        ...(step.requiresApproval ? { gate: jsonata(`${CURRENT}.gate`) } : {}),
        // Links the child to its parent in the console and in DescribeExecution, so an auditor
        // can walk from a step's execution to its plan's (about 75 bytes a step).
        AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID: jsonata('$states.context.Execution.Id'),
      },
      output: jsonata(`{"steps": $merge([${STEPS}, $states.result.Output])}`),
      // Only a refused start (throttling, the open-executions quota); the step's own failures come
      // as States.TaskFailed and go, as before, to Execute's Catch.
      retry: [START_EXECUTION_RETRY],
      next: props.next,
    });
  }
}

/** The step id a step call runs (its `step` literal), for the simulator; undefined for any other state. */
export function stepIdOfCall(state: AslState): string | undefined {
  const input = (state.Arguments as { Input?: { step?: unknown } } | undefined)?.Input;
  if (state.Resource !== START_EXECUTION_SYNC || typeof input?.step !== 'string') return undefined;
  const source = /^\{% (.*) %\}$/s.exec(input.step)?.[1];
  const data = source === undefined ? undefined : (JSON.parse(source) as { stepId?: unknown });
  return typeof data?.stepId === 'string' ? data.stepId : undefined;
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
