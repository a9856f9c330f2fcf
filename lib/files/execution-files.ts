/**
 * Seed 003's execution files as a pure projection of one execution's journal: the events are
 * the truth, and every file here is a function of (plan, events) only, so a run's files and a
 * later `plangate files <execution>` are byte for byte the same. No clock, no file is read back.
 *
 * `<plan-id>-execution/`
 * - `execution-state.md` — the status table (seed 003's statuses, plus skipped and rollback ones)
 * - `tasks/NN/handoff.md` — once the task is dispatched: identity, goal, values from its
 *   dependencies, required outputs, constraints, fallbacks, earlier attempts
 * - `tasks/NN/execution.log` — one timestamped entry per event of the task ({@link logEntry})
 * - `tasks/NN/result.md` — once the task has an outcome: status, what its agent used, captured
 *   values, summary, files modified, validation criterion → PASS/FAIL → evidence, errors, rollback
 * - `<plan-id>-execution-result.md` — once EXECUTION_COMPLETE is written (with what the agents used)
 */
import { type Plan, REFERENCE_PATTERN, type Step } from '../plan/schema.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { markdownCell as cell } from '../runtime/shared/markdown.ts';

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
  files.set(STATE_FILE, stateFile(plan, events, tasks));
  for (const step of plan.steps) {
    if (onlyTasks && !onlyTasks.has(step.id)) continue;
    const view = tasks.get(step.id) as TaskView;
    const dir = taskDir(plan, step.id);
    if (view.dispatched) files.set(`${dir}/handoff.md`, handoff(plan, step, events, view));
    if (view.events.length > 0) files.set(`${dir}/execution.log`, view.events.map(logEntry).join(''));
    if (hasOutcome(view.status)) files.set(`${dir}/result.md`, result(plan, step, view));
  }
  const complete = events.find((e) => e.event === 'EXECUTION_COMPLETE');
  if (complete) files.set(resultFileName(plan.id), executionResult(plan, events, tasks, complete));
  return files;
}

/** The log entry of one event: a timestamped line, then indented detail lines. Append-only. */
export function logEntry(event: JournalRecord): string {
  const d = event.details as Record<string, unknown>;
  const head = `${event.timestamp} ${event.event}`;
  const more: string[] = [];
  let line: string;
  switch (event.event) {
    case 'TASK_STARTED':
      line = `attempt ${num(d.attempt)}: ${str(d.progress)}`;
      break;
    case 'TASK_COMPLETED':
    case 'TASK_FAILED': {
      line = str(d.progress);
      if (typeof d.worker === 'string') more.push(`worker: ${d.worker}`);
      if (typeof d.error_message === 'string') more.push(d.error_message);
      const excerpt = evidenceOf(d)?.excerpt;
      if (typeof excerpt === 'string' && excerpt) more.push(excerpt);
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
    default:
      line = JSON.stringify(d);
  }
  return `${head}: ${line}\n${more
    .flatMap((m) => m.split('\n'))
    .map((l) => `    ${l}\n`)
    .join('')}`;
}

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
        set('in_progress');
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

function handoff(plan: Plan, step: Step, events: readonly JournalRecord[], view: TaskView): string {
  const values = inputValues(plan, step, events);
  const lines = [
    `# Handoff: Task ${taskNumber(plan, step.id)} — ${step.description}`,
    '',
    `**Plan:** ${plan.id} v${plan.version}`,
    `**Step:** \`${step.id}\``,
    step.requiresHuman
      ? '**Done by:** a person (report the outputs on the approval page or in the terminal)'
      : step.target
        ? `**Agent:** ${step.target}`
        : `**Tool:** ${step.tool ?? '-'}`,
    '',
    '## What to accomplish',
    '',
    step.task ?? step.description,
    '',
    `Objective of the plan: ${plan.objective}`,
    '',
    '## Context from prior tasks',
    '',
    ...(values.length === 0
      ? ['None.']
      : [
          '| Value | From | Captured |',
          '|-------|------|----------|',
          ...values.map(
            (v) => `| \`${v.name}\` | Task ${taskNumber(plan, v.from)} (\`${v.from}\`) | ${cell(v.value)} |`,
          ),
        ]),
    '',
    '## Required outputs',
    '',
    ...(step.outputs.length === 0 ? ['None declared.'] : step.outputs.map((o) => `- \`${o}\``)),
    '',
    '## Constraints',
    '',
    ...constraints(plan, step),
    '',
    '## Fallbacks',
    '',
    ...fallbacks(step),
    '',
  ];
  const failures = view.events.filter((e) => e.event === 'TASK_FAILED');
  if (failures.length > 0)
    lines.push(
      '## Earlier attempts',
      '',
      ...failures.map((e) => `- ${e.timestamp}: ${cell(firstLine(str(e.details.error_message)))}`),
      '',
    );
  return lines.join('\n');
}

interface InputValue {
  readonly from: string;
  readonly name: string;
  readonly value: string;
}

/** The declared outputs of the step's dependencies and every `${steps.<id>.<name>}` it uses, as captured. */
function inputValues(plan: Plan, step: Step, events: readonly JournalRecord[]): InputValue[] {
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
  const out: InputValue[] = [];
  for (const [from, names] of [...wanted].sort(([a], [b]) => a.localeCompare(b))) {
    const captured = lastResult(events, from);
    for (const name of [...names].sort())
      out.push({
        from,
        name,
        value: captured && Object.hasOwn(captured, name) ? show(captured[name]) : '(not captured)',
      });
  }
  return out;
}

function constraints(plan: Plan, step: Step): string[] {
  const out = [
    `- Time limit: ${Math.min(step.timeoutSeconds, plan.budget.wallClockSeconds ?? Number.POSITIVE_INFINITY)} s`,
  ];
  const b = plan.budget;
  if (b.maxCommands !== undefined) out.push(`- At most ${b.maxCommands} commands`);
  if (b.tokens !== undefined) out.push(`- Plan token budget: ${b.tokens}`);
  if (b.costUsd !== undefined) out.push(`- Plan cost budget: $${b.costUsd.toFixed(2)}`);
  if (b.wallClockSeconds !== undefined) out.push(`- Plan wall-clock budget: ${b.wallClockSeconds} s`);
  if (step.requiresApproval) out.push('- A person approves this step before it runs');
  return out;
}

function fallbacks(step: Step): string[] {
  const out: string[] = [];
  if (step.onFail)
    out.push(
      `- On failure: retry ${step.onFail.retries} time(s), then ${step.onFail.escalation === 'ask' ? 'ask a person' : step.onFail.escalation}`,
    );
  else
    out.push("- On failure: the plan's recovery recipes apply (retry by failure class, then ask a person)");
  out.push(
    step.critical
      ? '- Critical: skipping it stops the run'
      : '- Not critical: if skipped, independent steps go on',
  );
  if (step.rollback) out.push(`- Undone on abort by its rollback (${step.rollback.tool})`);
  return out;
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
  const modified = filesModified(captured);
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
    completed
      ? str(completed.details.progress)
      : lastFailure
        ? str(lastFailure.details.progress)
        : view.note || view.status,
    '',
    '## Files modified',
    '',
    ...(modified.length > 0 ? modified.map((f) => `- ${f}`) : ['None reported.']),
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

/** Files an agent said it modified (`filesModified` or `files_modified` in its result). */
function filesModified(captured: Record<string, unknown>): string[] {
  const value = captured.filesModified ?? captured.files_modified;
  return Array.isArray(value) ? value.map(show) : [];
}

function evidenceOf(details: Record<string, unknown>): { summary?: unknown; excerpt?: unknown } | undefined {
  const e = details.evidence;
  return e && typeof e === 'object' ? (e as { summary?: unknown; excerpt?: unknown }) : undefined;
}

const show = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const list = (v: unknown): string => (Array.isArray(v) ? v.join(', ') : str(v));
const firstLine = (text: string): string => text.split('\n', 1)[0] ?? '';
