/**
 * A step: the step-runner task (calls the tool) followed by the contract-checker task (proves
 * it). An agent step (a `target`, no `tool`) runs on a worker instead: the runner only starts it
 * (skip, block, budget, TASK_STARTED, its inputs resolved), then an activity Task queues the
 * handoff for a worker of that target, which runs the agent and then the approved contract; the
 * checker records the worker's evidence. Only the checker's answer enters the ledger, so only the checker completes a step. Both
 * carry the recipe Retry blocks; anything left over is caught into the step's escalation.
 * A step with `requiresHuman` (seed 003) has a human gate where the runner would be: a person
 * gets the instructions, does the work and reports the outputs, which the checker then checks.
 */
import { effectiveTimeoutSeconds, heartbeatSecondsFor, runsOnWorker } from '../plan/agent-steps.ts';
import { RUNNER_MARGIN_SECONDS } from '../plan/function-limits.ts';
import type { Step } from '../plan/schema.ts';
import type { BudgetLimits } from '../runtime/payloads/index.ts';
import { handoffFallbacks } from '../runtime/steps/handoff.ts';
import type { AslRetrier } from './asl.ts';
import {
  ATTEMPT,
  CURRENT,
  EXECUTION_SCOPE,
  entriesOf,
  mergeCurrent,
  RUN_ATTEMPT,
  STEPS,
  skippedByApprover,
} from './dataflow.ts';
import { GateTask } from './gate-task.ts';
import { jsonata, literal, lookup, quote } from './jsonata.ts';
import type { RetryPolicy } from './retry-policy.ts';
import {
  type Catcher,
  Choice,
  type Fragment,
  InvokeActivity,
  LambdaInvoke,
  type State,
} from './states/index.ts';
import { stepGateRejection } from './step-gate.ts';
import { contractNeeds, type DataNeeds, runnerNeeds } from './step-reads.ts';

export { runsOnWorker };

export interface StepTaskProps {
  readonly step: Step;
  /** 1-based position in the plan, for "[Task N/M]". */
  readonly index: number;
  readonly total: number;
  readonly retryPolicy: RetryPolicy;
  /** Where failures go (the step's escalation). */
  readonly recoverState: string;
  /** Above this many bytes the runner stores the output outside the payload. */
  readonly inlineOutputLimitBytes: number;
  /** Every step id of the plan, to find the steps this one reads. */
  readonly stepIds: ReadonlySet<string>;
  /** How long a human step's gate waits for the person: the approval policy's timeout. */
  readonly approvalTimeoutSeconds: number;
  /**
   * Send the plan's recipes (`$recovery`) to the runner and checker, so a failure is classified
   * by them when it is detected. Only plans that declare recipes need it.
   * @default false
   */
  readonly sendRecipes?: boolean;
  /**
   * Send the plan's secret declarations (`$secrets`: names and where the values live, never the
   * values) to every runner and checker, not only to steps that reference a secret: their
   * redactors then know every declared value, however it reached a tool's output (an agent that
   * read its environment, say).
   * @default false
   */
  readonly sendSecretDeclarations?: boolean;
  /**
   * The plan's budget (seed 004 §7): the runner checks what remains before the tool runs, and
   * no step may run longer than the whole wall-clock budget.
   * @default - no budget
   */
  readonly budget?: BudgetLimits;
}

export function stepTaskStates(stepId: string) {
  return {
    start: `Start ${stepId}`,
    dispatch: `Dispatch ${stepId}`,
    run: `Run ${stepId}`,
    check: `Check ${stepId}`,
  };
}

/** The state a fresh attempt of `step` enters (a gate's APPROVE, an escalation's RETRY). */
export function stepEntryState(step: Step): string {
  const names = stepTaskStates(step.id);
  return runsOnWorker(step) ? names.start : names.run;
}

/** Why the step's last attempt failed, when this one is a retry (seed 004 §7); null on a first attempt. */
const PREVIOUS_FAILURE = `$exists(${CURRENT}.retryOf) ? ${CURRENT}.retryOf : null`;

/** The ledger entry fields the checker's answer contributes (evidence stays in the journal). */
const ENTRY_FIELDS = '["status", "output", "outputRef"]';

export class StepTask {
  constructor(private readonly props: StepTaskProps) {}

  toAsl(next: string | undefined): Fragment {
    const { step } = this.props;
    const names = stepTaskStates(step.id);
    const retry = this.props.retryPolicy.toAsl();
    // The runner's failed attempt counts its Retry block's retries; a check retries no work.
    const catchInto = (phase: 'run' | 'check'): Catcher[] => [
      {
        errorEquals: ['States.ALL'],
        output: jsonata(
          mergeCurrent(
            `{"stepId": ${quote(step.id)}, "attempt": ${phase === 'run' && !step.requiresHuman ? RUN_ATTEMPT : ATTEMPT}, "phase": "${phase}", "error": $states.errorOutput}`,
          ),
        ),
        next: this.props.recoverState,
      },
    ];
    const checks = contractNeeds(step.contract, step.id, this.props.stepIds);
    const work: State[] = runsOnWorker(step)
      ? [
          this.runner(names.start, names.dispatch, retry, catchInto('run'), true),
          // A skipped or blocked step goes straight to the checker, which records it; no worker is asked.
          new Choice(names.dispatch, {
            choices: [{ condition: jsonata(`${CURRENT}.run.status = "dispatched"`), next: names.run }],
            default: names.check,
            happyPath: names.run,
          }),
          this.activity(names.run, step.target as string, names.check, catchInto('run')),
        ]
      : [
          step.requiresHuman
            ? this.humanGate(names.run, names.check, catchInto('run'))
            : this.runner(names.run, names.check, retry, catchInto('run'), false),
        ];
    const check = new LambdaInvoke(names.check, {
      lambda: 'contractChecker',
      payload: {
        ...this.stepScope(),
        ...(step.contract !== undefined ? { contract: literal(step.contract) } : {}),
        ...(step.aws !== undefined ? { aws: literal(step.aws) } : {}),
        ...(step.network !== undefined ? { network: literal(step.network) } : {}),
        ...planData(checks, this.props.sendSecretDeclarations ?? false),
        ...(checks.steps.length > 0 ? { inputs: jsonata(entriesOf(checks.steps)) } : {}),
        run: jsonata(`${CURRENT}.run`),
        ...shapesOf(step),
        attempt: jsonata(ATTEMPT),
        checkRetries: jsonata('$states.context.State.RetryCount'),
        ...this.recipes(),
      },
      output: jsonata(
        `{"steps": $merge([${STEPS}, {"${step.id}": $sift($states.result.Payload, function($v, $k) { $k in ${ENTRY_FIELDS} })}])}`,
      ),
      retry,
      catch: catchInto('check'),
      next,
    });
    return { startAt: stepEntryState(step), states: [...work, check] };
  }

  /** The step's own limit, or the plan's whole wall-clock budget when that is shorter. */
  private timeoutSeconds(): number {
    return effectiveTimeoutSeconds(this.props.step, this.props.budget);
  }

  /** `recovery: $recovery` when the plan declares recipes of its own. */
  private recipes(): { recovery?: string } {
    return this.props.sendRecipes ? { recovery: jsonata('$recovery') } : {};
  }

  /** The request fields naming the step (payloads.ts StepScope). */
  private stepScope() {
    const { step, index, total } = this.props;
    return { ...EXECUTION_SCOPE, stepId: step.id, index, total, description: literal(step.description) };
  }

  private runner(
    name: string,
    next: string,
    retry: readonly AslRetrier[],
    catchers: readonly Catcher[],
    dispatch: boolean,
  ): State {
    const { step } = this.props;
    const reads = runnerNeeds(step, this.props.stepIds);
    const approverOverrides = lookup('$mods.argOverrides', step.id);
    return new LambdaInvoke(name, {
      lambda: 'stepRunner',
      payload: {
        ...this.stepScope(),
        ...(step.tool !== undefined ? { tool: literal(step.tool) } : {}),
        ...(step.target !== undefined ? { target: literal(step.target) } : {}),
        ...(step.task !== undefined ? { task: literal(step.task) } : {}),
        ...(step.subscriptions.length > 0 ? { subscriptions: literal(step.subscriptions) } : {}),
        args: literal(step.args),
        // Only a step gate can add overrides of its own.
        argOverrides: jsonata(
          `$merge([{}, ${approverOverrides}${step.requiresApproval ? `, ${lookup(`${CURRENT}.gate.argOverrides`, step.id)}` : ''}])`,
        ),
        ...planData(reads, this.props.sendSecretDeclarations ?? false),
        ...(step.dependsOn.length > 0 ? { dependsOn: literal(step.dependsOn) } : {}),
        inputs: jsonata(entriesOf(union(step.dependsOn, reads.steps))),
        skip: jsonata(skipped(step)),
        ...rejection(step),
        attempt: jsonata(RUN_ATTEMPT),
        ...this.recipes(),
        ...(step.outputs.length > 0 ? { outputs: literal(step.outputs) } : {}),
        ...(step.aws !== undefined ? { aws: literal(step.aws) } : {}),
        ...(step.network !== undefined ? { network: literal(step.network) } : {}),
        timeoutSeconds: this.timeoutSeconds(),
        inlineOutputLimitBytes: this.props.inlineOutputLimitBytes,
        ...(this.props.budget ? { budget: literal(this.props.budget) } : {}),
        // Kept in TASK_STARTED with the rest of the handoff (the activity hands the worker the same).
        ...(dispatch ? { dispatch: true, previousFailure: jsonata(PREVIOUS_FAILURE) } : {}),
      },
      // The runner's margin beyond its tool's timeout: the tool's timeout ends a hung attempt, once.
      timeoutSeconds: this.timeoutSeconds() + RUNNER_MARGIN_SECONDS,
      output: jsonata(
        mergeCurrent('{"attempt": $states.result.Payload.attempt, "run": $states.result.Payload}'),
      ),
      retry,
      catch: catchers,
      next,
    });
  }

  /**
   * The handoff queued on the target's activity: what the step is, what it reads (resolved by the
   * runner that started it), what it must produce, and the contract as approved (a literal of
   * this definition, so neither the agent nor the workspace can change what proves the work). A
   * retry carries why the last attempt failed (seed 004 §7: retry with an augmented prompt).
   * Failures are not retried here: the classifier records them and loops back through the runner.
   */
  private activity(name: string, target: string, next: string, catchers: readonly Catcher[]): State {
    const { step } = this.props;
    const timeoutSeconds = this.timeoutSeconds();
    const heartbeatSeconds = heartbeatSecondsFor(timeoutSeconds);
    // validatePlan refuses such a step (agent-timeout-too-short); compiling it anyway is a bug.
    if (heartbeatSeconds === undefined)
      throw new Error(`step "${step.id}" has ${timeoutSeconds} s: too short for an agent's heartbeat`);
    return new InvokeActivity(name, {
      comment: `Queued for a "${target}" worker (plangate worker --target ${target}).`,
      target,
      arguments: {
        ...this.stepScope(),
        target: literal(target),
        // Resolved by the runner that started it: values of earlier steps reach the agent.
        ...(step.task !== undefined ? { task: jsonata(`${CURRENT}.run.handoff.task`) } : {}),
        subscriptions: literal(step.subscriptions),
        args: jsonata(`${CURRENT}.run.handoff.args`),
        inputs: jsonata(`${CURRENT}.run.handoff.inputs`),
        budget: jsonata(`${CURRENT}.run.handoff.budget`),
        outputs: literal(step.outputs),
        ...shapesOf(step),
        attempt: jsonata(RUN_ATTEMPT),
        ...(step.contract !== undefined ? { contract: literal(step.contract) } : {}),
        previousFailure: jsonata(PREVIOUS_FAILURE),
        timeoutSeconds,
        heartbeatSeconds,
        fallbacks: literal(handoffFallbacks(step, this.props.retryPolicy.recovery)),
        ...(step.network !== undefined ? { network: literal(step.network) } : {}),
      },
      timeoutSeconds,
      heartbeatSeconds,
      output: jsonata(mergeCurrent(`{"attempt": ${RUN_ATTEMPT}, "run": $states.result}`)),
      catch: catchers,
      next,
    });
  }

  /** The runner's place for a human step: its answer is the runner result the checker checks. */
  private humanGate(name: string, next: string, catchers: readonly Catcher[]): State {
    const { step, index, total } = this.props;
    // The instructions' references are resolved by the gate, from these entries and `context`.
    const reads = runnerNeeds(step, this.props.stepIds);
    return new GateTask(name, {
      kind: 'human',
      comment: 'A person does this step and reports its outputs; the contract checker then checks them.',
      payload: {
        stepId: step.id,
        description: literal(step.description),
        index,
        total,
        round: jsonata(ATTEMPT),
        question: null,
        attempt: jsonata(ATTEMPT),
        human: {
          instructions: literal(step.task ?? step.description),
          outputs: literal(step.outputs),
          ...shapesOf(step),
          skip: jsonata(skipped(step)),
          ...rejection(step),
          dependsOn: literal(step.dependsOn),
          inputs: jsonata(entriesOf(union(step.dependsOn, reads.steps))),
          ...(reads.context ? { context: jsonata('$context') } : {}),
          inlineOutputLimitBytes: this.props.inlineOutputLimitBytes,
        },
      },
      timeoutSeconds: this.props.approvalTimeoutSeconds,
      output: jsonata(mergeCurrent(`{"attempt": ${ATTEMPT}, "run": $states.result}`)),
      catch: catchers,
      next,
    });
  }
}

/** `outputShapes` for the states that accept the step's outputs (checker, worker, human gate), when it declares any. */
function shapesOf(step: Step): { outputShapes?: unknown } {
  return step.outputShapes && Object.keys(step.outputShapes).length > 0
    ? { outputShapes: literal(step.outputShapes) }
    : {};
}

/** Skipped at the plan gate, or (only a gated step can be) refused at its step gate. */
function skipped(step: Step): string {
  const byPlanGate = skippedByApprover(step.id);
  return step.requiresApproval ? `${byPlanGate} or ${CURRENT}.gate.decision = "REJECT"` : byPlanGate;
}

/** Who rejected it at its own gate (only a gated step has one), so TASK_SKIPPED can say so. */
function rejection(step: Step): { rejection?: string } {
  return step.requiresApproval ? { rejection: jsonata(stepGateRejection(`${CURRENT}.gate`)) } : {};
}

/** `$context` only when the step's text references it; `$secrets` also whenever the plan declares any. */
function planData(needs: DataNeeds, secretDeclarations: boolean): Record<string, string> {
  return {
    ...(needs.context ? { context: jsonata('$context') } : {}),
    ...(needs.secrets || secretDeclarations ? { secrets: jsonata('$secrets') } : {}),
  };
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}
