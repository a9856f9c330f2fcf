/**
 * compilePlan: a validated plan → ASL definitions (JSONata) with `${…}` resource placeholders,
 * and a compile report. Pure: no I/O, same input → same output.
 */
import {
  effectiveTimeoutSeconds,
  heartbeatSecondsFor,
  MIN_AGENT_TIMEOUT_SECONDS,
} from '../plan/agent-steps.ts';
import { planDigest } from '../plan/digest.ts';
import { effectiveRecovery, type RecoveryTable } from '../plan/recovery.ts';
import { FAILURE_CLASSES, type Plan, type PlanInput, PlanSchema, type Step } from '../plan/schema.ts';
import type { ToolRegistry } from '../plan/tools.ts';
import type {
  BudgetLimits,
  PlanIdentity,
  PlanSummary,
  RecipeSummary,
  StepView,
} from '../runtime/payloads/index.ts';
import { approvalView, fitApprovalView, stepGateView, VIEW_LIMIT_BYTES } from './approval-view.ts';
import type { AslDefinition, AslRetrier, CompiledDefinition } from './asl.ts';
import { CHILD_STATES, ChildMachine } from './child-machine.ts';
import { COMPLETION_STATES, Completion } from './completion.ts';
import { gateLadderPolicy } from './gate-ladder.ts';
import { literal } from './jsonata.ts';
import { childPlaceholder, type MachinePlaceholder, ref, stepMachinePlaceholder } from './placeholders.ts';
import { planFacts } from './plan-facts.ts';
import { PlanGate } from './plan-gate.ts';
import { planGraph } from './plan-graph.ts';
import { HISTORY_EVENTS, PlanStep } from './plan-step.ts';
import { STEP_FUNCTIONS_QUOTAS } from './quotas.ts';
import { type ChildBlock, LayoutRenderer } from './render.ts';
import { buildReport, type CompileReport } from './report.ts';
import { RetryPolicy } from './retry-policy.ts';
import { Rollback } from './rollback.ts';
import { BranchScope, StateNamer } from './scope.ts';
import { type Layout, type Size, Splitter } from './split.ts';
import { Parallel, StateGraph } from './states/index.ts';
import { StepMachine } from './step-machine.ts';
import { contractNeeds } from './step-reads.ts';
import { runsOnWorker } from './step-task.ts';
import { decompose } from './structure.ts';

export interface CompileOptions {
  /**
   * The approved plan's digest, `sha256:<hex>`.
   * @default - computed from the plan with lib/plan's planDigest
   */
  readonly digest?: string;
  /**
   * Step outputs whose JSON is larger than this are stored outside the state payload and
   * passed by reference.
   * @default 4096
   */
  readonly inlineOutputLimitBytes?: number;
  /**
   * AWS's execution history limit.
   * @default 25000
   */
  readonly maxHistoryEvents?: number;
  /**
   * Share of the history limit kept free for retries, escalations and loops; the happy path of
   * each machine must fit in the rest.
   * @default 0.5
   */
  readonly historyHeadroom?: number;
  /**
   * Largest definition per machine, in bytes (AWS's limit is 1 MiB).
   * @default 900000
   */
  readonly maxDefinitionBytes?: number;
  /**
   * Name of the main definition; children are `<name>-part-<n>`.
   * @default the plan id
   */
  readonly name?: string;
  /**
   * Compute critical-path inflation by simulating the compiled definition (unit durations).
   * @default true
   */
  readonly simulate?: boolean;
  /**
   * Run tool steps on step machines (step-machine.ts): a step then takes ~0.5 KB of the plan
   * machine instead of ~5 KB, for one more billed transition and a child execution (its start
   * and end) per step. `auto` does so when the steps' own states would take more than a quarter
   * of `maxDefinitionBytes`: a smaller plan is far from the quota, and keeps the lower cost and
   * latency per step.
   * @default 'auto'
   */
  readonly stepMachines?: 'auto' | 'always' | 'never';
  /**
   * The tools the approval view's risk marks are judged with.
   * @default - the built-in tools
   */
  readonly tools?: ToolRegistry;
}

export interface CompileResult {
  /** The main machine first, then its children (part 1, 2, …). */
  readonly definitions: readonly CompiledDefinition[];
  /** Every `${…}` name the definitions use, sorted. */
  readonly substitutions: readonly string[];
  readonly report: CompileReport;
}

/** Bad input to the compiler: says where. */
export class CompileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CompileError';
  }
}

/**
 * Largest plan gate summary, in JSON bytes: it is sent in the plan gate's request, whose state
 * payload Step Functions caps at 256 KiB; the rest is room for the token, the policy and a question.
 * The approval view takes what the objective, step ids and graph leave, up to VIEW_LIMIT_BYTES.
 */
export const SUMMARY_LIMIT_BYTES = 200 * 1024;

/** The share of `maxDefinitionBytes` above which `stepMachines: 'auto'` uses step machines. */
const STEP_MACHINE_SHARE = 0.25;

const MACHINE_OVERHEAD = {
  top: { events: 40, bytes: 6_000 },
  child: { events: 8, bytes: 1_500 },
} as const;

export function compilePlan(input: Plan | PlanInput, options: CompileOptions = {}): CompileResult {
  const parsed = PlanSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'plan';
    throw new CompileError(`${where}: ${issue?.message ?? 'invalid plan'}`);
  }
  const plan = parsed.data;
  for (const step of plan.steps.filter(runsOnWorker)) {
    const seconds = effectiveTimeoutSeconds(step, plan.budget);
    if (heartbeatSecondsFor(seconds) === undefined)
      throw new CompileError(
        `steps.${step.id}: an agent step needs at least ${MIN_AGENT_TIMEOUT_SECONDS} s (it has ${seconds} s), so its worker's heartbeat fits in its time`,
      );
  }
  const identity: PlanIdentity = {
    id: plan.id,
    version: plan.version,
    digest: options.digest ?? `sha256:${planDigest(plan)}`,
  };
  const name = options.name ?? plan.id;
  const inlineOutputLimitBytes = options.inlineOutputLimitBytes ?? 4096;
  const maxHistoryEvents = options.maxHistoryEvents ?? STEP_FUNCTIONS_QUOTAS.historyEvents;
  const headroom = options.historyHeadroom ?? 0.5;
  const maxDefinitionBytes = options.maxDefinitionBytes ?? 900_000;

  let decomposition: ReturnType<typeof decompose>;
  try {
    decomposition = decompose(plan.steps);
  } catch (error) {
    throw new CompileError((error as Error).message);
  }
  const recovery = effectiveRecovery(plan);
  const facts = planFacts(plan);
  const stepIds = new Set(plan.steps.map((s) => s.id));
  const recoverySummary = summarize(recovery.plan);
  const approvalTimeoutSeconds = plan.approval.timeoutSeconds;
  const approvalLadder = gateLadderPolicy(plan);

  const ancestors = ancestorsOf(plan.steps);
  // What approvers see: the whole view, cut to fit the plan gate's summary below; each step gate
  // carries its own step's view.
  const view = approvalView(plan, options.tools);
  // Tool steps run on step machines (one per distinct set of Retry blocks) when that is chosen.
  const stepMachines = new Map<string, { placeholder: MachinePlaceholder; retry: AslRetrier[] }>();
  const stepMachineOf = (step: Step): MachinePlaceholder | undefined => {
    if (step.requiresHuman || runsOnWorker(step)) return undefined;
    const retry = new RetryPolicy({ recovery: recovery.steps.get(step.id) ?? recovery.plan }).toAsl();
    const key = JSON.stringify(retry);
    let machine = stepMachines.get(key);
    if (!machine) {
      machine = { placeholder: stepMachinePlaceholder(stepMachines.size + 1), retry };
      stepMachines.set(key, machine);
    }
    return machine.placeholder;
  };
  const planStepsOf = (onMachines: boolean) =>
    new Map(
      plan.steps.map((step, i) => {
        const stepMachine = onMachines ? stepMachineOf(step) : undefined;
        const planStep = new PlanStep({
          step,
          index: i + 1,
          total: plan.steps.length,
          recovery: recovery.steps.get(step.id) ?? recovery.plan,
          approvalTimeoutSeconds,
          approvalLadder,
          inlineOutputLimitBytes,
          joinPredecessors: decomposition.joins.get(step.id) ?? [],
          signalSuccessors: decomposition.signals.get(step.id) ?? [],
          ancestors: ancestors.get(step.id) ?? [],
          stepIds,
          ...(step.requiresApproval ? { gateView: stepGateView(view.steps[i] as StepView) } : {}),
          sendRecipes: Object.keys(plan.recovery).length > 0,
          sendSecretDeclarations: plan.secrets.length > 0,
          ...(budgetLimits(plan) ? { budget: budgetLimits(plan) } : {}),
          ...(stepMachine ? { stepMachine } : {}),
        });
        return [step.id, planStep] as const;
      }),
    );
  // Sizes come from rendering each step once: its own states plus its share of the scope's
  // shared escalation (whose fixed part is in the splitter's per-branch overhead).
  const sizesOf = (steps: ReadonlyMap<string, PlanStep>) => {
    const sizing = new BranchScope(new StateNamer());
    const sizes = new Map<string, Size>();
    for (const [id, planStep] of steps) {
      const rendered = StateGraph.of(planStep.toAsl(sizing, 'Next state')).renderStates();
      const bytes = jsonBytes(rendered) + planStep.escalationBytes();
      sizes.set(id, { events: planStep.cost().historyEvents, bytes });
    }
    return sizes;
  };
  const mode = options.stepMachines ?? 'auto';
  let planSteps = planStepsOf(mode === 'always');
  let stepSizes = sizesOf(planSteps);
  if (mode === 'auto') {
    const inlineBytes = [...stepSizes.values()].reduce((n, size) => n + size.bytes, 0);
    if (inlineBytes > maxDefinitionBytes * STEP_MACHINE_SHARE) {
      planSteps = planStepsOf(true);
      stepSizes = sizesOf(planSteps);
    }
  }
  const graph = planGraph(plan.steps);
  const sketch: PlanSummary = {
    objective: oneLine(plan.objective),
    steps: plan.steps.length,
    stepIds: plan.steps.map((s) => s.id),
    ...(graph ? { graph } : {}),
  };
  const summary: PlanSummary = {
    ...sketch,
    view: fitApprovalView(view, Math.min(VIEW_LIMIT_BYTES, SUMMARY_LIMIT_BYTES - jsonBytes(sketch))),
  };
  const budget: Size = {
    events: Math.floor(maxHistoryEvents * (1 - headroom)) - MACHINE_OVERHEAD.top.events,
    // The plan gate's summary (Start's `$summary`, as it is written there) sits in the main
    // machine, however the steps are split.
    bytes: maxDefinitionBytes - MACHINE_OVERHEAD.top.bytes - jsonBytes(literal(summary)),
  };
  const splitter = new Splitter({ stepSize: (id) => stepSizes.get(id) as Size, budget });
  const layout = splitter.fit(decomposition.root);

  const stepById = new Map(plan.steps.map((s) => [s.id, s]));
  const renderer = new LayoutRenderer({
    steps: planSteps,
    childInputs: (block) => childInputs(block, stepById, decomposition.joins),
  });
  const namer = new StateNamer();

  // Main machine: Start → plan gate → Execute (the whole plan as one Parallel branch) → Finalize.
  const top = new BranchScope(namer);
  const executeScope = top.child();
  const body = renderer.render(layout, executeScope, undefined);
  const gate = new PlanGate({
    plan: identity,
    recovery: recoverySummary,
    facts,
    summary,
    ladder: approvalLadder,
    next: EXECUTE_STATE,
    finish: COMPLETION_STATES.finalize,
  }).toAsl();
  const withRollback = Rollback.applies(plan.steps);
  const completionBlock = new Completion({
    postconditions: plan.postconditions,
    stepIds: plan.steps.map((s) => s.id),
    afterRollback: withRollback,
  });
  const completion = completionBlock.toAsl();
  const rollback = withRollback
    ? new Rollback({
        steps: plan.steps,
        postconditionsRequest: completionBlock.request(),
        next: COMPLETION_STATES.finalize,
        interruptedRetry: new RetryPolicy({ recovery: recovery.plan }).interrupted(),
      }).toAsl()
    : undefined;
  const afterExecute = rollback?.startAt ?? COMPLETION_STATES.finalize;
  const execute = new Parallel(EXECUTE_STATE, {
    comment:
      'The approved plan. Any stop inside (abort, critical skip, timeout) is caught here so Finalize always runs.',
    branches: [StateGraph.of(body).addAll(executeScope.sharedStates)],
    output: jsonOutput('{"steps": $states.result[0].steps}'),
    catch: [
      {
        errorEquals: ['States.ALL'],
        // A stop inside a step machine or a part reaches here as `States.TaskFailed` whose
        // cause describes the child execution: its own Error and Cause are what stopped the run.
        output: jsonOutput(`{"error": ${CHILD_STOP}}`),
        next: afterExecute,
      },
    ],
    next: afterExecute,
  });
  const main = new StateGraph(gate.startAt, [
    ...gate.states,
    execute,
    ...(rollback?.states ?? []),
    ...completion.states,
  ]);
  const definitions: CompiledDefinition[] = [
    definition(
      name,
      main,
      `plangate ${plan.id} v${plan.version} (${identity.digest}): ${oneLine(plan.objective)}`,
    ),
  ];

  // Finalize checks the postconditions against the parent's ledger: the parts hand back what they name.
  const postconditionReads = new Set(
    plan.postconditions.flatMap((post) => contractNeeds(post.contract, '', stepIds).steps),
  );
  // Children, in the order their tasks appear (rendering a child may reveal grandchildren).
  for (let i = 0; i < renderer.children.length; i++) {
    const block = renderer.children[i] as ChildBlock;
    const scope = new BranchScope(namer);
    const inner = renderer.render(block.body, scope, CHILD_STATES.done);
    const frame = new ChildMachine({
      recovery: recoverySummary,
      facts,
      outputs: childOutputs(block, stepById, decomposition.joins, postconditionReads),
    }).toAsl({ startAt: inner.startAt, states: [...inner.states, ...scope.sharedStates] });
    definitions.push({
      ...definition(
        `${name}-part-${block.part}`,
        StateGraph.of(frame),
        `plangate ${plan.id} v${plan.version} (${identity.digest}), part ${block.part}`,
      ),
      arnSubstitution: childPlaceholder(block.part),
    });
  }

  // The step machines, after the parts (every machine may start them).
  for (const [i, machine] of [...stepMachines.values()].entries()) {
    const budget = budgetLimits(plan);
    const graph = new StepMachine({
      plan: identity,
      retry: machine.retry,
      recovery: recoverySummary,
      approval: facts.approval,
      approvalTimeoutSeconds,
      inlineOutputLimitBytes,
      total: plan.steps.length,
      sendRecipes: Object.keys(plan.recovery).length > 0,
      ...(budget ? { budget } : {}),
    }).graph();
    definitions.push({
      ...definition(
        `${name}-step-${i + 1}`,
        graph,
        `plangate ${plan.id} v${plan.version} (${identity.digest}), step machine ${i + 1}`,
      ),
      arnSubstitution: machine.placeholder,
    });
  }

  const substitutions = [
    ...new Set(definitions.flatMap((d) => d.resources.map((resource) => resource.placeholder))),
  ].sort();
  const report = buildReport({
    plan,
    identity,
    definitions,
    planSteps,
    decomposition,
    layout,
    limits: { maxHistoryEvents, maxDefinitionBytes, inlineOutputLimitBytes },
    machineOverhead: {
      top: MACHINE_OVERHEAD.top.events,
      child: MACHINE_OVERHEAD.child.events,
      parallel: HISTORY_EVENTS.parallel,
    },
    simulate: options.simulate ?? true,
  });
  return { definitions, substitutions, report };
}

export const EXECUTE_STATE = 'Execute';

/** `$states.errorOutput`, with every child execution's failure unwrapped to the Error and Cause that stopped it. */
const CHILD_STOP = `($unwrap := function($e) { $e.Error = "States.TaskFailed" and $contains($e.Cause, '"ExecutionArn"') ? ($d := $parse($e.Cause); $exists($d.Error) ? $unwrap({"Error": $d.Error, "Cause": $d.Cause}) : $e) : $e }; $unwrap($states.errorOutput))`;

/** The plan's budget, when it declares one: the limits the harness enforces, and `maxCommands` for agents' handoffs. */
function budgetLimits(plan: Plan): BudgetLimits | undefined {
  const { wallClockSeconds, costUsd, tokens, maxCommands } = plan.budget;
  const limits: BudgetLimits = {
    ...(wallClockSeconds !== undefined ? { wallClockSeconds } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(maxCommands !== undefined ? { maxCommands } : {}),
  };
  return Object.keys(limits).length > 0 ? limits : undefined;
}

/** Every step's transitive dependencies, sorted (the plan is acyclic: the validator said so). */
function ancestorsOf(steps: readonly Step[]): Map<string, string[]> {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const memo = new Map<string, Set<string>>();
  const visit = (id: string): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const all = new Set<string>();
    memo.set(id, all);
    for (const dep of byId.get(id)?.dependsOn ?? []) {
      all.add(dep);
      for (const a of visit(dep)) all.add(a);
    }
    return all;
  };
  return new Map(steps.map((s) => [s.id, [...visit(s.id)].sort()]));
}

function jsonOutput(expression: string): string {
  return `{% ${expression} %}`;
}

/** Size in UTF-8 bytes, as AWS counts definitions and payloads (not UTF-16 code units). */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function definition(name: string, graph: StateGraph, comment: string): CompiledDefinition {
  const asl = graph.toDefinition(comment);
  return { name, asl, json: JSON.stringify(asl), resources: graph.resources() };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 197)}...` : flat;
}

function summarize(table: RecoveryTable): Record<string, RecipeSummary> {
  const out: Record<string, RecipeSummary> = {};
  for (const failureClass of FAILURE_CLASSES) {
    const recipe = table[failureClass];
    out[failureClass] = {
      maxAttempts: recipe.maxAttempts,
      escalation: recipe.escalation,
      detect: recipe.detect,
    };
  }
  return out;
}

/** Steps of a layout, including those inside child blocks. */
export function layoutSteps(layout: Layout): string[] {
  const out: string[] = [];
  const stack: Layout[] = [layout];
  while (stack.length > 0) {
    const node = stack.pop() as Layout;
    if (node.kind === 'step') out.push(node.id);
    else if (node.kind === 'child') stack.push(node.body);
    else {
      const parts = node.kind === 'seq' ? node.items : node.branches;
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i] as Layout);
    }
  }
  return out;
}

type StepLookup = ReadonlyMap<string, { readonly dependsOn: readonly string[] }>;

/** Entries a child block reads from outside: dependencies not inside it and not joined. */
function childInputs(
  block: ChildBlock,
  steps: StepLookup,
  joins: ReadonlyMap<string, readonly string[]>,
): string[] {
  const inside = new Set(layoutSteps(block.body));
  const needed = new Set<string>();
  for (const id of inside) {
    const joined = new Set(joins.get(id) ?? []);
    for (const dep of steps.get(id)?.dependsOn ?? [])
      if (!inside.has(dep) && !joined.has(dep)) needed.add(dep);
  }
  return [...needed].sort();
}

/** Entries of a child block that steps after it, or the postconditions, read from the ledger. */
function childOutputs(
  block: ChildBlock,
  steps: ReadonlyMap<string, { readonly id: string; readonly dependsOn: readonly string[] }>,
  joins: ReadonlyMap<string, readonly string[]>,
  postconditionReads: ReadonlySet<string>,
): string[] {
  const inside = new Set(layoutSteps(block.body));
  const needed = new Set([...postconditionReads].filter((id) => inside.has(id)));
  for (const step of steps.values()) {
    if (inside.has(step.id)) continue;
    const joined = new Set(joins.get(step.id) ?? []);
    for (const dep of step.dependsOn) if (inside.has(dep) && !joined.has(dep)) needed.add(dep);
  }
  return [...needed].sort();
}

/** The `${…}` text of a child machine's ARN, as the parent's task holds it. */
export function childArnRef(part: number): string {
  return ref(childPlaceholder(part));
}
