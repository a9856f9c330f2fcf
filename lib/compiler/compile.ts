/**
 * compilePlan: a validated plan → ASL definitions (JSONata) with `${…}` resource placeholders,
 * and a compile report. Pure: no I/O, same input → same output.
 *
 * In five steps: read the plan (`readPlan`), work out once what the building blocks need of it
 * (`planContext`), render each step once and measure it (`measureSteps`, which also decides
 * whether tool steps run on step machines), split the plan into machines that fit AWS's quotas
 * (`layOut`), and render those machines (`planMachines`, `stepMachineDefinitions`); the report
 * is built from what was rendered.
 */
import {
  effectiveTimeoutSeconds,
  heartbeatSecondsFor,
  MIN_AGENT_TIMEOUT_SECONDS,
} from '../plan/agent-steps.ts';
import { planDigest } from '../plan/digest.ts';
import { type EffectiveRecovery, effectiveRecovery, type RecoveryTable } from '../plan/recovery.ts';
import { FAILURE_CLASSES, type Plan, type PlanInput, PlanSchema, type Step } from '../plan/schema.ts';
import type { ToolRegistry } from '../plan/tools.ts';
import {
  approvalView,
  fitApprovalView,
  stepGateView,
  VIEW_LIMIT_BYTES,
} from '../runtime/gate/approval-view.ts';
import type {
  ApprovalView,
  BudgetLimits,
  PlanIdentity,
  PlanSummary,
  RecipeSummary,
  StepView,
} from '../runtime/payloads/index.ts';
import type { AslRetrier, CompiledDefinition } from './asl.ts';
import { CHILD_STATES, ChildMachine } from './child-machine.ts';
import { COMPLETION_STATES, Completion } from './completion.ts';
import { type GateLadderPolicy, gateLadderPolicy } from './gate-ladder.ts';
import { literal } from './jsonata.ts';
import { childPlaceholder, stepMachinePlaceholder } from './placeholders.ts';
import { PlanGate } from './plan-gate.ts';
import { planGraph } from './plan-graph.ts';
import { PlanStep, type StepMachineRef, type StepMeasure } from './plan-step.ts';
import { type PlanVariables, planVariables } from './plan-variables.ts';
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
import { type Decomposition, decompose } from './structure.ts';

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
  /** The main machine first, then its children: its parts (1, 2, …), then its step machines. */
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

/**
 * What a machine's own states add, estimated (the splitter budgets with it): the main machine's
 * Start, plan gate, Execute and completion; a part's frame.
 */
const MACHINE_OVERHEAD = {
  top: { events: 40, bytes: 6_000 },
  child: { events: 8, bytes: 1_500 },
} as const;

export function compilePlan(input: Plan | PlanInput, options: CompileOptions = {}): CompileResult {
  const plan = readPlan(input);
  const context = planContext(plan, options);
  const steps = measureSteps(context);
  const { layout, summary } = layOut(context, steps);
  const definitions = [
    ...planMachines(context, steps, layout, summary),
    ...stepMachineDefinitions(context, steps.stepMachines),
  ];
  const substitutions = [
    ...new Set(definitions.flatMap((d) => d.resources.map((resource) => resource.placeholder))),
  ].sort();
  const report = buildReport({
    plan,
    identity: context.identity,
    definitions,
    costs: new Map([...steps.measures].map(([id, measure]) => [id, measure.cost])),
    stepMachinePaths: new Map(
      steps.stepMachines.map((machine, i) => [stepMachineName(context, i), machine.happyPath]),
    ),
    decomposition: context.decomposition,
    layout,
    limits: context.limits,
    machineOverhead: { top: MACHINE_OVERHEAD.top.events, child: MACHINE_OVERHEAD.child.events },
    simulate: options.simulate ?? true,
  });
  return { definitions, substitutions, report };
}

/** What the building blocks need of the plan, worked out once. */
interface PlanContext {
  readonly plan: Plan;
  readonly identity: PlanIdentity;
  /** The main definition's name; children are `<name>-part-<n>` and `<name>-step-<n>`. */
  readonly name: string;
  readonly limits: {
    readonly maxHistoryEvents: number;
    readonly maxDefinitionBytes: number;
    readonly inlineOutputLimitBytes: number;
  };
  readonly historyHeadroom: number;
  readonly stepMachineMode: NonNullable<CompileOptions['stepMachines']>;
  readonly decomposition: Decomposition;
  readonly recovery: EffectiveRecovery;
  /** What the classifier needs of each of the plan's recipes. */
  readonly recoverySummary: Record<string, RecipeSummary>;
  readonly planVariables: PlanVariables;
  readonly ladder: GateLadderPolicy;
  /** Each step's transitive dependencies, sorted. */
  readonly ancestors: ReadonlyMap<string, readonly string[]>;
  /** What approvers see: the whole view, cut to fit the plan gate's summary; each step gate carries its own step's. */
  readonly view: ApprovalView;
  readonly stepIds: ReadonlySet<string>;
  readonly budget: BudgetLimits | undefined;
  /** The plan declares recipes of its own: runners and checkers classify with them. */
  readonly sendRecipes: boolean;
}

/** The plan, parsed with its defaults; a CompileError says where it is not what the compiler takes. */
function readPlan(input: Plan | PlanInput): Plan {
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
  return plan;
}

function planContext(plan: Plan, options: CompileOptions): PlanContext {
  let decomposition: Decomposition;
  try {
    decomposition = decompose(plan.steps);
  } catch (error) {
    throw new CompileError((error as Error).message);
  }
  const recovery = effectiveRecovery(plan);
  return {
    plan,
    identity: {
      id: plan.id,
      version: plan.version,
      digest: options.digest ?? `sha256:${planDigest(plan)}`,
    },
    name: options.name ?? plan.id,
    limits: {
      maxHistoryEvents: options.maxHistoryEvents ?? STEP_FUNCTIONS_QUOTAS.historyEvents,
      maxDefinitionBytes: options.maxDefinitionBytes ?? 900_000,
      inlineOutputLimitBytes: options.inlineOutputLimitBytes ?? 4096,
    },
    historyHeadroom: options.historyHeadroom ?? 0.5,
    stepMachineMode: options.stepMachines ?? 'auto',
    decomposition,
    recovery,
    recoverySummary: summarize(recovery.plan),
    planVariables: planVariables(plan),
    ladder: gateLadderPolicy(plan),
    ancestors: ancestorsOf(plan.steps),
    view: approvalView(plan, options.tools),
    stepIds: new Set(plan.steps.map((s) => s.id)),
    budget: budgetLimits(plan),
    sendRecipes: Object.keys(plan.recovery).length > 0,
  };
}

/** A step machine of the plan (one per distinct set of Retry blocks), rendered. */
interface StepMachineSpec extends StepMachineRef {
  readonly graph: StateGraph;
}

/** Every step as a building block, rendered once and measured. */
interface MeasuredSteps {
  readonly planSteps: ReadonlyMap<string, PlanStep>;
  readonly measures: ReadonlyMap<string, StepMeasure>;
  /** The step machines the tool steps run on; none when their states are in the plan machines. */
  readonly stepMachines: readonly StepMachineSpec[];
}

/**
 * The steps measured, on step machines when that is chosen: `auto` puts tool steps on step
 * machines when their own states would take more than a quarter of `maxDefinitionBytes`.
 */
function measureSteps(context: PlanContext): MeasuredSteps {
  if (context.stepMachineMode === 'always') return measure(context, stepMachinesOf(context));
  const inline = measure(context, new Map());
  if (context.stepMachineMode === 'never') return inline;
  const inlineBytes = [...inline.measures.values()].reduce((n, m) => n + m.size.bytes, 0);
  if (inlineBytes <= context.limits.maxDefinitionBytes * STEP_MACHINE_SHARE) return inline;
  return measure(context, stepMachinesOf(context));
}

/** The step machine each tool step runs on: one per distinct set of Retry blocks, numbered as first used. */
function stepMachinesOf(context: PlanContext): ReadonlyMap<string, StepMachineSpec> {
  const byRetry = new Map<string, StepMachineSpec>();
  const byStep = new Map<string, StepMachineSpec>();
  for (const step of context.plan.steps) {
    if (step.requiresHuman || runsOnWorker(step)) continue;
    const retry = new RetryPolicy({ recovery: recoveryOf(context, step.id) }).toAsl();
    const key = JSON.stringify(retry);
    let machine = byRetry.get(key);
    if (!machine) {
      const graph = stepMachine(context, retry).graph();
      machine = {
        placeholder: stepMachinePlaceholder(byRetry.size + 1),
        graph,
        happyPath: graph.happyPath(),
      };
      byRetry.set(key, machine);
    }
    byStep.set(step.id, machine);
  }
  return byStep;
}

function stepMachine(context: PlanContext, retry: readonly AslRetrier[]): StepMachine {
  const { plan } = context;
  return new StepMachine({
    plan: context.identity,
    retry,
    recovery: context.recoverySummary,
    approval: context.planVariables.approval,
    approvalTimeoutSeconds: plan.approval.timeoutSeconds,
    inlineOutputLimitBytes: context.limits.inlineOutputLimitBytes,
    total: plan.steps.length,
    sendRecipes: context.sendRecipes,
    budget: context.budget,
  });
}

function measure(context: PlanContext, stepMachines: ReadonlyMap<string, StepMachineSpec>): MeasuredSteps {
  const { plan, decomposition } = context;
  const planSteps = new Map<string, PlanStep>();
  const measures = new Map<string, StepMeasure>();
  for (const [i, step] of plan.steps.entries()) {
    const machine = stepMachines.get(step.id);
    const planStep = new PlanStep({
      step,
      index: i + 1,
      total: plan.steps.length,
      recovery: recoveryOf(context, step.id),
      approvalTimeoutSeconds: plan.approval.timeoutSeconds,
      approvalLadder: context.ladder,
      inlineOutputLimitBytes: context.limits.inlineOutputLimitBytes,
      joinPredecessors: decomposition.joins.get(step.id) ?? [],
      signalSuccessors: decomposition.signals.get(step.id) ?? [],
      ancestors: context.ancestors.get(step.id) ?? [],
      stepIds: context.stepIds,
      ...(step.requiresApproval ? { gateView: stepGateView(context.view.steps[i] as StepView) } : {}),
      sendRecipes: context.sendRecipes,
      sendSecretDeclarations: plan.secrets.length > 0,
      budget: context.budget,
      ...(machine
        ? { stepMachine: { placeholder: machine.placeholder, happyPath: machine.graph.happyPath() } }
        : {}),
    });
    planSteps.set(step.id, planStep);
    measures.set(step.id, planStep.measure());
  }
  return { planSteps, measures, stepMachines: [...new Set(stepMachines.values())] };
}

/**
 * The plan split into machines that fit: each machine's happy path within the history limit
 * (less the headroom) and its definition within `maxDefinitionBytes`. The plan gate's summary,
 * which sits in the main machine however the steps are split, comes out of its budget.
 */
function layOut(context: PlanContext, steps: MeasuredSteps): { layout: Layout; summary: PlanSummary } {
  const { plan, limits } = context;
  const graph = planGraph(plan.steps);
  const sketch: PlanSummary = {
    objective: oneLine(plan.objective),
    steps: plan.steps.length,
    stepIds: plan.steps.map((s) => s.id),
    graph,
  };
  const summary: PlanSummary = {
    ...sketch,
    view: fitApprovalView(context.view, Math.min(VIEW_LIMIT_BYTES, SUMMARY_LIMIT_BYTES - jsonBytes(sketch))),
  };
  const budget: Size = {
    events: Math.floor(limits.maxHistoryEvents * (1 - context.historyHeadroom)) - MACHINE_OVERHEAD.top.events,
    // The plan gate's summary (Start's `$summary`, as it is written there).
    bytes: limits.maxDefinitionBytes - MACHINE_OVERHEAD.top.bytes - jsonBytes(literal(summary)),
  };
  const splitter = new Splitter({ stepSize: (id) => (steps.measures.get(id) as StepMeasure).size, budget });
  return { layout: splitter.fit(context.decomposition.root), summary };
}

/**
 * The main machine, then its parts in the order their tasks appear (rendering a part may reveal
 * parts of its own). State names are unique across all of them: they share one namer.
 */
function planMachines(
  context: PlanContext,
  steps: MeasuredSteps,
  layout: Layout,
  summary: PlanSummary,
): CompiledDefinition[] {
  const stepById = new Map(context.plan.steps.map((s) => [s.id, s]));
  const renderer = new LayoutRenderer({
    steps: steps.planSteps,
    childInputs: (block) => childInputs(block, stepById, context.decomposition.joins),
  });
  const namer = new StateNamer();
  const main = mainMachine(context, renderer, namer, layout, summary);
  const definitions = [main.definition];
  const pending = [...main.parts];
  for (let block = pending.shift(); block !== undefined; block = pending.shift()) {
    const part = partMachine(context, renderer, namer, block, stepById);
    definitions.push(part.definition);
    pending.push(...part.parts);
  }
  return definitions;
}

/** A rendered machine and the parts it starts. */
interface RenderedMachine {
  readonly definition: CompiledDefinition;
  readonly parts: readonly ChildBlock[];
}

/** Start → plan gate → Execute (the whole plan as one Parallel branch) → [rollback] → Finalize. */
function mainMachine(
  context: PlanContext,
  renderer: LayoutRenderer,
  namer: StateNamer,
  layout: Layout,
  summary: PlanSummary,
): RenderedMachine {
  const { plan, identity } = context;
  const top = new BranchScope(namer);
  const executeScope = top.child();
  const body = renderer.render(layout, executeScope, undefined);
  const gate = new PlanGate({
    plan: identity,
    recovery: context.recoverySummary,
    planVariables: context.planVariables,
    summary,
    ladder: context.ladder,
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
        interruptedRetry: new RetryPolicy({ recovery: context.recovery.plan }).interrupted(),
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
  const graph = new StateGraph(gate.startAt, [
    ...gate.states,
    execute,
    ...(rollback?.states ?? []),
    ...completion.states,
  ]);
  const comment = `plangate ${plan.id} v${plan.version} (${identity.digest}): ${oneLine(plan.objective)}`;
  return { definition: definition(context.name, graph, comment), parts: body.parts };
}

/** A block of the plan as its own machine; Finalize reads what it hands back. */
function partMachine(
  context: PlanContext,
  renderer: LayoutRenderer,
  namer: StateNamer,
  block: ChildBlock,
  stepById: ReadonlyMap<string, Step>,
): RenderedMachine {
  const { plan, identity } = context;
  const scope = new BranchScope(namer);
  const inner = renderer.render(block.body, scope, CHILD_STATES.done);
  // Finalize checks the postconditions against the parent's ledger: the parts hand back what they name.
  const postconditionReads = new Set(
    plan.postconditions.flatMap((post) => contractNeeds(post.contract, '', context.stepIds).steps),
  );
  const frame = new ChildMachine({
    recovery: context.recoverySummary,
    planVariables: context.planVariables,
    outputs: childOutputs(block, stepById, context.decomposition.joins, postconditionReads),
  }).toAsl({ startAt: inner.startAt, states: [...inner.states, ...scope.sharedStates] });
  const comment = `plangate ${plan.id} v${plan.version} (${identity.digest}), part ${block.part}`;
  return {
    definition: {
      ...definition(`${context.name}-part-${block.part}`, StateGraph.of(frame), comment),
      arnSubstitution: childPlaceholder(block.part),
    },
    parts: inner.parts,
  };
}

/** The step machines, after the parts (every machine may start them). */
function stepMachineDefinitions(
  context: PlanContext,
  stepMachines: readonly StepMachineSpec[],
): CompiledDefinition[] {
  const { plan, identity } = context;
  return stepMachines.map((machine, i) => ({
    ...definition(
      stepMachineName(context, i),
      machine.graph,
      `plangate ${plan.id} v${plan.version} (${identity.digest}), step machine ${i + 1}`,
    ),
    arnSubstitution: machine.placeholder,
  }));
}

function stepMachineName(context: PlanContext, index: number): string {
  return `${context.name}-step-${index + 1}`;
}

/** A step's effective recipes: the plan's, with its own `onFail` applied. */
function recoveryOf(context: PlanContext, stepId: string): RecoveryTable {
  return context.recovery.steps.get(stepId) ?? context.recovery.plan;
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
