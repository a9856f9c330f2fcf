/**
 * Seed 003's execution files as a pure projection of one execution's journal: the events are
 * the truth, and every file here is a function of (plan, events) only, so a run's files and a
 * later `plangate files <execution>` are byte for byte the same. No clock, no file is read back.
 *
 * `<plan-id>-execution/`
 * - `execution-state.md` — the status table (seed 003's statuses, plus skipped and rollback ones)
 * - `tasks/NN/handoff.md` — once the task is dispatched: the handoff its doer got, rendered by
 *   the one renderer the worker uses (lib/runtime/steps/handoff.ts) from what TASK_STARTED kept,
 *   so an agent's is byte for byte what it read: identity, goal, values from prior tasks,
 *   required outputs, constraints, fallback behaviours, how to report, earlier attempts
 * - `tasks/NN/execution.log` — one timestamped entry per event of the task ({@link logEntry}),
 *   with each command run (the step's, its agent's, its contract's) and its output, bounded
 * - `tasks/NN/result.md` — once the task has an outcome: status, what its agent used, captured
 *   values, summary, files modified (from the workspace), validation criterion → PASS/FAIL →
 *   evidence, errors, blockers, deviations, rollback
 * - `<plan-id>-execution-result.md` — once EXECUTION_COMPLETE is written (with what the agents used)
 *
 * Every file but the handoff is for people: plan text and command output in it show hidden
 * characters as symbols (lib/plan/visible-text.ts). A handoff stays exactly what its doer read.
 */
import { effectiveTimeoutSeconds, heartbeatSecondsFor, runsOnWorker } from '../plan/agent-steps.ts';
import { effectiveRecovery } from '../plan/recovery.ts';
import { type Plan, REFERENCE_PATTERN, type Step } from '../plan/schema.ts';
import { stepInvocation } from '../plan/tools.ts';
import { visibleText } from '../plan/visible-text.ts';
import {
  type AgentRun,
  AgentRunSchema,
  HandoffSchema,
  type HandoffStart,
  HandoffStartSchema,
  type JournalRecord,
} from '../runtime/payloads/index.ts';
import { markdownCell as cell } from '../runtime/shared/markdown.ts';
import { truncateText } from '../runtime/shared/truncate.ts';
import {
  agentHandoffDocument,
  type HandoffDocument,
  handoffFallbacks,
  renderHandoffDocument,
} from '../runtime/steps/handoff.ts';

/** Bytes of one output shown in a log entry (the journal keeps at most 16 KiB of any string). */
const LOG_OUTPUT_BYTES = 4096;

/** File contents by path relative to the execution directory. */
export type ExecutionFiles = Map<string, string>;

/** Seed 003's directory name for a plan. */
export function executionDirName(planId: string): string {
  return `${planId}-execution`;
}

export const STATE_FILE = 'execution-state.md';

export function resultFileName(planId: string): string {
  return `${planId}-execution-result.md`;
}

/** `tasks/NN`, NN the step's 1-based place in the plan (two digits at least). */
export function taskDir(plan: Plan, stepId: string): string {
  const width = Math.max(2, String(plan.steps.length).length);
  const index = plan.steps.findIndex((s) => s.id === stepId);
  return `tasks/${String(index + 1).padStart(width, '0')}`;
}

export type TaskStatus =
  | 'pending'
  | 'in_progress'
  | 'completed'
  | 'failed'
  | 'blocked'
  | 'skipped'
  | 'rolling_back'
  | 'rolled_back'
  | 'rollback_failed';

/** What the events say about one task. */
interface TaskView {
  status: TaskStatus;
  note: string;
  updated?: string;
  dispatched: boolean;
  attempts: number;
  events: JournalRecord[];
}

/**
 * Every file of the execution, from its events in sequence order; with `onlyTasks`, the plan-level
 * files and those tasks' files (what one new event can change: a task's files depend on its own
 * events and on the values its dependencies captured before it was dispatched).
 */
export function executionFiles(
  plan: Plan,
  events: readonly JournalRecord[],
  onlyTasks?: ReadonlySet<string>,
): ExecutionFiles {
  const files: ExecutionFiles = new Map();
  const tasks = taskViews(plan, events);
  files.set(STATE_FILE, visibleText(stateFile(plan, events, tasks)));
  for (const step of plan.steps) {
    if (onlyTasks && !onlyTasks.has(step.id)) continue;
    const view = tasks.get(step.id) as TaskView;
    const dir = taskDir(plan, step.id);
    if (view.dispatched) files.set(`${dir}/handoff.md`, handoff(plan, step, events, view));
    if (view.events.length > 0)
      files.set(`${dir}/execution.log`, view.events.map((e) => logEntry(plan, e)).join(''));
    if (hasOutcome(view.status)) files.set(`${dir}/result.md`, visibleText(result(plan, step, view)));
  }
  const complete = events.find((e) => e.event === 'EXECUTION_COMPLETE');
  if (complete)
    files.set(resultFileName(plan.id), visibleText(executionResult(plan, events, tasks, complete)));
  return files;
}

/**
 * The log entry of one event (seed 003's execution.log: timestamp, action, command, output,
 * observations): a timestamped line, then indented detail lines: each command run and its output
 * (`$ command`, then its output lines, bounded). Append-only.
 */
export function logEntry(plan: Plan, event: JournalRecord): string {
  const d = event.details as Record<string, unknown>;
  const step = plan.steps.find((s) => s.id === event.task_id);
  const head = `${event.timestamp} ${event.event}`;
  const more: string[] = [];
  let line: string;
  switch (event.event) {
    case 'TASK_STARTED':
      line = `attempt ${num(d.attempt)}: ${str(d.progress)}`;
      if (step && runsOnWorker(step))
        more.push(`handed to a "${step.target}" worker (the handoff: handoff.md)`);
      else if (step?.requiresHuman) more.push('handed to a person (the handoff: handoff.md)');
      break;
    case 'TASK_COMPLETED':
    case 'TASK_FAILED': {
      line = str(d.progress);
      if (typeof d.worker === 'string') more.push(`worker: ${d.worker}`);
      more.push(...agentRunLines(d.agent_run));
      if (step && !d.agent_run) more.push(...toolRunLines(step, d.result));
      if (typeof d.error_message === 'string') more.push(d.error_message);
      more.push(...contractLines(evidenceOf(d)));
      break;
    }
    case 'FAILURE_DETECTED':
      line = `${str(d.error)} (attempt ${num(d.attempt)}): ${firstLine(str(d.error_message))}`;
      break;
    case 'FAILURE_CLASSIFIED':
      line = `${str(d.failure_type)} (${str(d.error)})`;
      break;
    case 'RECOVERY_APPLIED':
      line = `${str(d.recipe_name)} → ${str(d.outcome)}`;
      break;
    case 'RECOVERY_ESCALATION':
      line =
        d.user_decision === undefined
          ? `asked: ${str(d.reason)}`
          : `decision ${str(d.user_decision)} (${str(d.decided_by ?? 'person')})`;
      break;
    case 'ROLLBACK_COMPLETED':
    case 'ROLLBACK_FAILED':
      line = JSON.stringify(d);
      if (step?.rollback?.tool === 'shell' && typeof step.rollback.args.command === 'string')
        more.push(`$ ${step.rollback.args.command}   (the rollback)`);
      more.push(...contractLines(evidenceOf(d)));
      break;
    default:
      line = JSON.stringify(d);
  }
  return visibleText(
    `${head}: ${line}\n${more
      .flatMap((m) => m.split('\n'))
      .map((l) => `    ${l}\n`)
      .join('')}`,
  );
}

/** What an agent ran (its command, exit, the end of its output and its own log of commands). */
function agentRunLines(value: unknown): string[] {
  const parsed = AgentRunSchema.safeParse(value);
  if (!parsed.success) return [];
  const run = parsed.data;
  return [
    `$ ${run.command}   (the agent: ${run.exitCode === null ? `stopped by ${run.signal ?? 'a signal'}` : `exit ${run.exitCode}`} after ${(run.durationMs / 1000).toFixed(1)} s)`,
    ...outputLines('stdout', run.stdout),
    ...outputLines('stderr', run.stderr),
    ...outputLines('its log ($PLANGATE_LOG)', run.log ?? ''),
  ];
}

/** A shell step's command as the plan has it (references unfilled) and its output, when the result kept it. */
function toolRunLines(step: Step, result: unknown): string[] {
  const call = stepInvocation(step);
  if (call?.tool !== 'shell' || typeof call.args.command !== 'string') return [];
  const output = (result ?? {}) as { exitCode?: unknown; stdout?: unknown; stderr?: unknown };
  return [
    `$ ${call.args.command}${typeof output.exitCode === 'number' ? `   (exit ${output.exitCode})` : ''}`,
    ...outputLines('stdout', typeof output.stdout === 'string' ? output.stdout : ''),
    ...outputLines('stderr', typeof output.stderr === 'string' ? output.stderr : ''),
  ];
}

/** The contract the harness ran and what it showed (a command as `$ command`). */
function contractLines(evidence: ReturnType<typeof evidenceOf>): string[] {
  if (!evidence || typeof evidence.ran !== 'string') return [];
  const stderr = typeof evidence.stderr === 'string' ? evidence.stderr : '';
  const excerpt = typeof evidence.excerpt === 'string' ? evidence.excerpt : '';
  const ran = evidence.kind === 'command' ? `$ ${evidence.ran}` : `${str(evidence.kind)} ${evidence.ran}`;
  return [
    `${ran}   (the contract: ${str(evidence.summary)})`,
    ...outputLines('output', excerpt),
    ...(stderr && !excerpt.includes(stderr.trim()) ? outputLines('stderr', stderr) : []),
  ];
}

function outputLines(label: string, text: string): string[] {
  const trimmed = text.trimEnd();
  return trimmed
    ? [
        `${label}:`,
        ...bounded(trimmed)
          .split('\n')
          .map((l) => `| ${l}`),
      ]
    : [];
}

const bounded = (text: string): string => truncateText(text, LOG_OUTPUT_BYTES).text;

/** Each step's status and note as the events say, by step id (what `execution-state.md` shows). */
export function taskStatuses(
  plan: Plan,
  events: readonly JournalRecord[],
): Map<string, { readonly status: TaskStatus; readonly note: string }> {
  return new Map(
    [...taskViews(plan, events)].map(([id, view]) => [id, { status: view.status, note: view.note }]),
  );
}

function taskViews(plan: Plan, events: readonly JournalRecord[]): Map<string, TaskView> {
  const humanSteps = new Set(plan.steps.filter((s) => s.requiresHuman).map((s) => s.id));
  const views = new Map<string, TaskView>(
    plan.steps.map((s) => [
      s.id,
      { status: 'pending', note: '', dispatched: false, attempts: 0, events: [] },
    ]),
  );
  for (const e of events) {
    const view = e.task_id ? views.get(e.task_id) : undefined;
    if (!view) continue;
    view.events.push(e);
    const d = e.details as Record<string, unknown>;
    const set = (status: TaskStatus, note = '') => {
      view.status = status;
      view.note = note;
      view.updated = e.timestamp;
    };
    switch (e.event) {
      case 'TASK_STARTED':
        view.dispatched = true;
        view.attempts = Math.max(view.attempts, num(d.attempt));
        // A person's step waits for them (seed 003: blocked, awaiting_human_action) until they report.
        if (humanSteps.has(e.task_id ?? '')) set('blocked', 'awaiting_human_action');
        else set('in_progress');
        break;
      case 'GATE_APPROVAL_REQUESTED':
        if (d.gate === 'human') {
          view.dispatched = true;
          view.attempts = Math.max(view.attempts, num(d.round));
          set('blocked', 'awaiting_human_action');
        } else if (d.gate === 'step') set('blocked', 'awaiting_approval');
        break;
      case 'TASK_COMPLETED':
        set('completed');
        break;
      case 'TASK_FAILED':
        set('failed', firstLine(str(d.error_message)));
        break;
      case 'RECOVERY_ESCALATION':
        if (d.user_decision === undefined) set('blocked', 'awaiting_decision');
        else if (d.user_decision === 'SKIP') set('skipped', 'skipped at escalation');
        else if (d.user_decision === 'ABORT') set('failed', 'aborted');
        break;
      case 'TASK_SKIPPED':
        set('skipped', str(d.reason));
        break;
      case 'TASK_BLOCKED':
        set('blocked', `dependency: ${list(d.blocked_by)}`);
        break;
      case 'BUDGET_EXCEEDED':
        set('blocked', 'awaiting_budget_decision');
        break;
      case 'ROLLBACK_STARTED':
        set('rolling_back');
        break;
      case 'ROLLBACK_COMPLETED':
        set('rolled_back');
        break;
      case 'ROLLBACK_FAILED':
        set('rollback_failed', firstLine(str(d.error_message)));
        break;
    }
  }
  return views;
}

function hasOutcome(status: TaskStatus): boolean {
  return status !== 'pending' && status !== 'in_progress' && status !== 'rolling_back';
}

function stateFile(plan: Plan, events: readonly JournalRecord[], tasks: Map<string, TaskView>): string {
  const first = events[0];
  const last = events.at(-1);
  const rows = plan.steps.map((s) => {
    const view = tasks.get(s.id) as TaskView;
    return `| ${taskNumber(plan, s.id)} | ${cell(s.id)} | ${view.status} | ${view.updated ?? '-'} | ${cell(view.note)} |`;
  });
  return [
    '# Execution State',
    '',
    `**Plan:** ${plan.id} v${plan.version} (${first?.planDigest ?? '-'})`,
    `**Execution:** ${first?.executionId ?? '-'}`,
    `**Started:** ${first?.timestamp ?? '-'}`,
    `**Updated:** ${last?.timestamp ?? '-'}`,
    '',
    '| Task | Step | Status | Updated | Note |',
    '|------|------|--------|---------|------|',
    ...rows,
    '',
  ].join('\n');
}

/**
 * The task's handoff as its doer got it, from its last TASK_STARTED: an agent's is the worker's
 * own handoff (the same fields through the same schema and renderer), a person's and a tool's
 * the same sections. An execution older than TASK_STARTED's `handoff` shows the values its
 * dependencies captured instead.
 */
function handoff(plan: Plan, step: Step, events: readonly JournalRecord[], view: TaskView): string {
  const started = view.events.findLast((e) => e.event === 'TASK_STARTED');
  const kept = HandoffStartSchema.safeParse(started?.details.handoff);
  const recorded: HandoffStart = kept.success ? kept.data : { inputs: inputsFromEvents(plan, step, events) };
  const index = plan.steps.indexOf(step) + 1;
  const identity = {
    plan: {
      id: started?.planId ?? plan.id,
      version: started?.planVersion ?? plan.version,
      digest: started?.planDigest ?? events[0]?.planDigest ?? '-',
    },
    executionId: started?.executionId ?? events[0]?.executionId ?? '-',
    stepId: step.id,
    index,
    total: plan.steps.length,
    description: step.description,
  };
  const attempt = Math.max(1, num(started?.details.attempt));
  const recovery = effectiveRecovery(plan);
  const fallbacks = handoffFallbacks(step, recovery.steps.get(step.id) ?? recovery.plan);
  const timeoutSeconds = effectiveTimeoutSeconds(step, plan.budget);
  // What the activity Task handed the worker (lib/compiler/step-task.ts), parsed as the worker parses it.
  const agent = runsOnWorker(step)
    ? HandoffSchema.safeParse({
        ...identity,
        target: step.target,
        task: recorded.task,
        subscriptions: step.subscriptions,
        inputs: recorded.inputs,
        outputs: step.outputs,
        attempt,
        contract: step.contract,
        previousFailure: recorded.previousFailure ?? null,
        timeoutSeconds,
        heartbeatSeconds: heartbeatSecondsFor(timeoutSeconds) ?? 1,
        budget: recorded.budget ?? {},
        fallbacks,
      })
    : undefined;
  if (agent?.success) return renderHandoffDocument(agentHandoffDocument(agent.data));
  const document: HandoffDocument = {
    ...identity,
    doer: step.requiresHuman
      ? { kind: 'person' }
      : step.target !== undefined && step.tool === undefined
        ? { kind: 'agent', target: step.target }
        : { kind: 'tool', tool: stepInvocation(step)?.tool ?? step.tool ?? '-' },
    task: recorded.task ?? step.task ?? step.description,
    subscriptions: step.subscriptions,
    inputs: recorded.inputs,
    outputs: step.outputs,
    attempt,
    contract: step.contract,
    previousFailure: null,
    timeLimit: step.requiresHuman
      ? { seconds: plan.approval.timeoutSeconds, why: "the plan's approval timeout: then the step fails" }
      : {
          seconds: timeoutSeconds,
          why: timeoutSeconds < step.timeoutSeconds ? "the plan's wall-clock budget" : undefined,
        },
    // The command limit is the agents' (seed 003's max_commands); a person or a tool has none.
    budget: {},
    fallbacks,
  };
  return renderHandoffDocument(document);
}

/**
 * The captured outputs of the step's dependencies and of every `${steps.<id>.<name>}` it uses,
 * as the events have them (for executions whose TASK_STARTED did not keep the handoff).
 */
function inputsFromEvents(plan: Plan, step: Step, events: readonly JournalRecord[]): HandoffStart['inputs'] {
  const wanted = new Map<string, Set<string>>();
  const want = (from: string, name: string) => {
    const names = wanted.get(from) ?? new Set<string>();
    names.add(name);
    wanted.set(from, names);
  };
  for (const dep of step.dependsOn)
    for (const name of plan.steps.find((s) => s.id === dep)?.outputs ?? []) want(dep, name);
  const text = JSON.stringify([step.args, step.task ?? '', step.rollback ?? {}]);
  for (const m of text.matchAll(REFERENCE_PATTERN))
    if (m[1] === 'steps' && m[2] && m[3] && m[2] !== step.id) want(m[2], m[3]);
  const inputs: HandoffStart['inputs'] = {};
  for (const [from, names] of wanted) {
    const captured = lastResult(events, from);
    inputs[from] = Object.fromEntries(
      [...names].map((name) => [
        name,
        captured && Object.hasOwn(captured, name) ? captured[name] : '(not captured)',
      ]),
    );
  }
  return inputs;
}

function result(plan: Plan, step: Step, view: TaskView): string {
  const completed = view.events.findLast((e) => e.event === 'TASK_COMPLETED');
  const captured = (completed?.details.result ?? {}) as Record<string, unknown>;
  const evidence = completed ? evidenceOf(completed.details) : undefined;
  const lastFailure = view.events.findLast((e) => e.event === 'TASK_FAILED');
  const validation: string[] = [];
  if (completed || lastFailure) {
    const ev = evidence ?? (lastFailure ? evidenceOf(lastFailure.details) : undefined);
    const passed = completed !== undefined && completed.seq > (lastFailure?.seq ?? 0);
    validation.push(
      `| ${step.contract ? `Contract (${step.contract.kind})` : 'Tool ran (no contract)'} | ${passed ? 'PASS' : 'FAIL'} | ${cell(ev?.summary !== undefined ? str(ev.summary) : passed ? '' : firstLine(str(lastFailure?.details.error_message)))} |`,
    );
    for (const name of step.outputs) {
      const has = completed !== undefined && Object.hasOwn(captured, name);
      validation.push(
        `| Output \`${name}\` captured | ${has ? 'PASS' : 'FAIL'} | ${has ? cell(show(captured[name])) : 'missing'} |`,
      );
    }
  }
  const runs = agentRuns(view);
  const lastRun = runs.at(-1);
  const rollback = rollbackLine(step, view);
  return [
    `# Result: Task ${taskNumber(plan, step.id)} — ${step.description}`,
    '',
    `**Status:** ${view.status}`,
    `**Step:** \`${step.id}\``,
    `**Attempts:** ${view.attempts}`,
    ...usageLine(view.events),
    ...workerLine(view.events),
    `**Updated:** ${view.updated ?? '-'}`,
    ...(view.note ? [`**Note:** ${view.note}`] : []),
    '',
    '## Captured values',
    '',
    ...(completed && Object.keys(captured).length > 0
      ? [
          '| Name | Value |',
          '|------|-------|',
          ...Object.entries(captured).map(([k, v]) => `| \`${k}\` | ${cell(show(v))} |`),
        ]
      : ['None.']),
    '',
    '## Summary',
    '',
    ...(lastRun?.run.summary ? [lastRun.run.summary, ''] : []),
    completed
      ? str(completed.details.progress)
      : lastFailure
        ? str(lastFailure.details.progress)
        : view.note || view.status,
    '',
    '## Files modified',
    '',
    ...filesModified(runs, captured),
    '',
    '## Validation',
    '',
    ...(validation.length > 0
      ? ['| Criterion | Result | Evidence |', '|-----------|--------|----------|', ...validation]
      : ['Not validated: the task did not run.']),
    '',
    '## Errors',
    '',
    ...errors(view),
    '',
    '## Blockers',
    '',
    ...blockers(view, lastRun?.run),
    '',
    '## Deviations from plan',
    '',
    ...deviations(view, runs),
    '',
    ...(rollback ? ['## Rollback', '', rollback, ''] : []),
  ].join('\n');
}

function errors(view: TaskView): string[] {
  const failed = view.events.filter((e) => e.event === 'TASK_FAILED' || e.event === 'ROLLBACK_FAILED');
  if (failed.length === 0) return ['None.'];
  return failed.map((e) => `- ${e.timestamp} ${e.event}: ${cell(firstLine(str(e.details.error_message)))}`);
}

/** What happened to the step's rollback procedure; undefined when it has none. */
function rollbackLine(step: Step, view: TaskView): string | undefined {
  if (!step.rollback) return undefined;
  const done = view.events.findLast((e) => e.event === 'ROLLBACK_COMPLETED' || e.event === 'ROLLBACK_FAILED');
  if (!done) return `${step.rollback.tool}: untested (not run in this execution)`;
  if (done.event === 'ROLLBACK_FAILED')
    return `${step.rollback.tool}: FAILED at ${done.timestamp}: ${firstLine(str(done.details.error_message))}`;
  return `${step.rollback.tool}: rolled back and verified at ${done.timestamp} (${str(evidenceOf(done.details)?.summary)})`;
}

function executionResult(
  plan: Plan,
  events: readonly JournalRecord[],
  tasks: Map<string, TaskView>,
  complete: JournalRecord,
): string {
  const d = complete.details as Record<string, unknown>;
  const summary = (d.summary ?? {}) as Record<string, unknown>;
  const first = events[0];
  const posts = events.filter((e) => e.event === 'POSTCONDITION_CHECKED');
  const withRollback = plan.steps.filter((s) => s.rollback);
  const untested = withRollback.filter(
    (s) => !tasks.get(s.id)?.events.some((e) => e.event === 'ROLLBACK_COMPLETED'),
  );
  const lines = [
    `# Execution Result: ${plan.id}`,
    '',
    `**Plan:** ${plan.id} v${plan.version} (${complete.planDigest})`,
    `**Objective:** ${plan.objective.replace(/\s+/g, ' ').trim()}`,
    `**Execution:** ${complete.executionId}`,
    `**Started:** ${first?.timestamp ?? '-'}`,
    `**Finished:** ${complete.timestamp}`,
    `**Outcome:** ${d.succeeded === true ? 'succeeded' : `failed${d.error ? `: ${str(d.error)}` : ''}${d.reason ? ` — ${cell(firstLine(str(d.reason)))}` : ''}`}`,
    `**Summary:** ${num(summary.completed)}/${plan.steps.length} tasks completed, ${num(summary.failed)} failed, ${num(summary.skipped)} skipped or blocked`,
    ...usageLine(events),
    '',
    '## Tasks',
    '',
    '| Task | Step | Status | Attempts | Evidence |',
    '|------|------|--------|----------|----------|',
    ...plan.steps.map((s) => {
      const view = tasks.get(s.id) as TaskView;
      const done = view.events.findLast((e) => e.event === 'TASK_COMPLETED');
      return `| ${taskNumber(plan, s.id)} | ${cell(s.id)} | ${view.status} | ${view.attempts} | ${cell(str(done ? evidenceOf(done.details)?.summary : view.note))} |`;
    }),
    '',
    '## Postconditions',
    '',
    ...(posts.length === 0
      ? [plan.postconditions.length === 0 ? 'None declared.' : 'Not checked: the run stopped early.']
      : [
          '| Postcondition | Result | Evidence |',
          '|---------------|--------|----------|',
          ...posts.map(
            (e) =>
              `| ${cell(str(e.details.postcondition_id))} | ${e.details.passed ? 'PASS' : 'FAIL'} | ${cell(str(evidenceOf(e.details)?.summary))} |`,
          ),
        ]),
    '',
    '## Rollback verification',
    '',
    ...(withRollback.length === 0
      ? ['The plan declares no rollback procedures.']
      : [
          '| Task | Step | Procedure | Rollback |',
          '|------|------|-----------|----------|',
          ...withRollback.map(
            (s) =>
              `| ${taskNumber(plan, s.id)} | ${cell(s.id)} | ${s.rollback?.tool} | ${cell(rollbackLine(s, tasks.get(s.id) as TaskView)?.replace(/^[^:]*: /, '') ?? '')} |`,
          ),
          '',
          untested.length === 0
            ? 'Every rollback procedure was run and verified.'
            : `Untested: ${untested.map((s) => `\`${s.id}\``).join(', ')} (prove them with \`plangate run --rehearse-rollback\`).`,
        ]),
    '',
  ];
  return lines.join('\n');
}

/**
 * `**Usage:** N tokens, $X` over the attempts whose agents reported what they used (TASK_COMPLETED
 * and TASK_FAILED `usage`: what the budget counts); nothing when none did.
 */
function usageLine(events: readonly JournalRecord[]): string[] {
  let tokens = 0;
  let cost = 0;
  let reported = 0;
  for (const e of events) {
    if (e.event !== 'TASK_COMPLETED' && e.event !== 'TASK_FAILED') continue;
    const usage = e.details.usage as { tokens?: unknown; costUsd?: unknown } | undefined;
    if (!usage) continue;
    reported += 1;
    tokens += num(usage.tokens);
    cost += num(usage.costUsd);
  }
  if (reported === 0) return [];
  return [
    `**Usage:** ${tokens} tokens, $${cost.toFixed(2)} (${reported} attempt${reported === 1 ? '' : 's'} reported)`,
  ];
}

/** `**Worker:** host:pid` for each attempt a worker answered (agent steps); nothing when none did. */
function workerLine(events: readonly JournalRecord[]): string[] {
  const ran = events.flatMap((e) =>
    (e.event === 'TASK_COMPLETED' || e.event === 'TASK_FAILED') && typeof e.details.worker === 'string'
      ? [e.details.worker]
      : [],
  );
  return ran.length === 0 ? [] : [`**Worker:** ${[...new Set(ran)].join(', ')}`];
}

function taskNumber(plan: Plan, stepId: string): string {
  return taskDir(plan, stepId).slice('tasks/'.length);
}

/** The output of the step's last TASK_COMPLETED before now, as recorded. */
function lastResult(events: readonly JournalRecord[], stepId: string): Record<string, unknown> | undefined {
  const done = events.findLast((e) => e.event === 'TASK_COMPLETED' && e.task_id === stepId);
  return done?.details.result as Record<string, unknown> | undefined;
}

/** Each attempt's agent run (a worker's report), in order. */
function agentRuns(view: TaskView): { attempt: number; run: AgentRun }[] {
  let attempt = 0;
  const runs: { attempt: number; run: AgentRun }[] = [];
  for (const e of view.events) {
    if (e.event === 'TASK_STARTED') attempt = num(e.details.attempt);
    if (e.event !== 'TASK_COMPLETED' && e.event !== 'TASK_FAILED') continue;
    const run = AgentRunSchema.safeParse(e.details.agent_run);
    if (run.success) runs.push({ attempt, run: run.data });
  }
  return runs;
}

/**
 * The files the task changed, as its workspace says (git, each attempt's worker), else as its
 * agent said (`filesModified` or `files_modified` in its result); else that nobody tracked them.
 */
function filesModified(runs: readonly { run: AgentRun }[], captured: Record<string, unknown>): string[] {
  const tracked = runs.filter(({ run }) => run.filesModified !== undefined);
  if (tracked.length > 0) {
    const files = [...new Set(tracked.flatMap(({ run }) => run.filesModified ?? []))].sort();
    return files.length > 0
      ? files.map((f) => `- ${f}`)
      : ["None: the workspace's git status and commits did not change."];
  }
  const value = captured.filesModified ?? captured.files_modified;
  if (Array.isArray(value) && value.length > 0)
    return value.map((f) => `- ${show(f)} (as the agent reported)`);
  return ['Not tracked: the step ran no agent in a git workspace, and nothing reported files.'];
}

/** What keeps the task from going on: what its agent reported, and what it waits for. */
function blockers(view: TaskView, run: AgentRun | undefined): string[] {
  const lines = [
    ...(run?.blockers ?? []).map((b) => `- ${cell(b)} (reported by the agent)`),
    ...(view.status === 'blocked' && view.note ? [`- ${view.note}`] : []),
  ];
  return lines.length > 0 ? lines : ['None.'];
}

/**
 * What happened other than as planned: what its agent reported as deviations (each attempt's),
 * a person's decision at an escalation, and a skip.
 */
function deviations(view: TaskView, runs: readonly { attempt: number; run: AgentRun }[]): string[] {
  const lines = [
    ...runs.flatMap(({ attempt, run }) =>
      run.deviations.map((d) => `- ${cell(d)} (reported by the agent, attempt ${attempt})`),
    ),
    ...view.events
      .filter((e) => e.event === 'RECOVERY_ESCALATION' && e.details.user_decision !== undefined)
      .map(
        (e) =>
          `- ${e.timestamp}: ${str(e.details.decided_by ?? 'person') === 'recipe' ? 'the recipe' : 'a person'} decided ${str(e.details.user_decision)} after a failure`,
      ),
    ...(view.status === 'skipped' ? [`- skipped: ${cell(view.note)}`] : []),
  ];
  return lines.length > 0 ? lines : ['None reported.'];
}

interface EvidenceFields {
  kind?: unknown;
  summary?: unknown;
  excerpt?: unknown;
  ran?: unknown;
  stderr?: unknown;
}

function evidenceOf(details: Record<string, unknown>): EvidenceFields | undefined {
  const e = details.evidence;
  return e && typeof e === 'object' ? (e as EvidenceFields) : undefined;
}

const show = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const list = (v: unknown): string => (Array.isArray(v) ? v.join(', ') : str(v));
const firstLine = (text: string): string => text.split('\n', 1)[0] ?? '';
