/**
 * Seed 000's progress lines, computed from journal events only (the log is the source of
 * truth): `[Task 2/5] ✓ Build image (4.1s)`, `[Task 3/5] ✗ Run tests: exit 1`,
 * `RECOVERY_APPLIED: retry_transient → success`, and the final `5/5 tasks completed. 0 failures.`
 */
import { type TaskStatus, taskStatuses } from '../files/execution-files.ts';
import type { ChecklistState, StepProgress, StepState } from '../plan/render.ts';
import type { Plan } from '../plan/schema.ts';
import { type JournalRecord, MACHINE_ERRORS } from '../runtime/payloads/index.ts';

/** What the progress view knows of the plan: step order and names. */
export interface PlanOutline {
  readonly id: string;
  readonly steps: readonly { readonly id: string; readonly description: string }[];
}

export function outlineOf(plan: Plan): PlanOutline {
  return { id: plan.id, steps: plan.steps.map((s) => ({ id: s.id, description: s.description })) };
}

/** A step that has started and not ended, for the spinner. */
export interface RunningStep {
  readonly label: string;
  readonly since: number;
}

/** Turns events into lines; keeps just enough state for durations and the spinner. */
export class ProgressFormatter {
  private readonly started = new Map<string, number>();
  /** Steps whose TASK_FAILED line was just printed. */
  private readonly failedLine = new Set<string>();

  constructor(private readonly outline: PlanOutline) {}

  /** Steps started and not yet completed, failed, skipped or blocked. */
  running(): RunningStep[] {
    return [...this.started].map(([id, since]) => ({
      label: `${this.position(id)} ${this.name(id)}`,
      since,
    }));
  }

  /** The lines an event prints (none for events the view does not show). */
  lines(event: JournalRecord): string[] {
    const d = event.details as Record<string, unknown>;
    const id = event.task_id ?? '';
    const at = Date.parse(event.timestamp);
    switch (event.event) {
      case 'PLAN_CREATED':
        return [`PLAN_CREATED: ${event.planId} v${event.planVersion}, ${num(d.task_count)} tasks`];
      case 'PLAN_START_RECOVERED':
        return [
          d.outcome === 'started'
            ? 'PLAN_START_RECOVERED: its start, cut short by a crash, was made after the restart'
            : `PLAN_START_RECOVERED: its start, cut short by a crash, cannot be made: ${str(d.reason)}`,
        ];
      case 'GATE_APPROVAL_REQUESTED':
        return [`GATE_APPROVAL_REQUESTED: ${gateLabel(d.gate, id, this)} (round ${num(d.round)})`];
      case 'GATE_APPROVED':
        return [
          `GATE_APPROVED: ${gateLabel(d.gate, id, this)}${by(d.approver)}${modifications(d.modifications)}`,
        ];
      case 'GATE_REJECTED':
        return [`GATE_REJECTED: ${gateLabel(d.gate, id, this)}${by(d.approver)}: ${str(d.reason)}`];
      case 'GATE_CLARIFICATION_REQUESTED':
        return [`GATE_CLARIFICATION_REQUESTED: ${str(d.question)}`];
      case 'GATE_ANSWER_REFUSED':
        return [`GATE_ANSWER_REFUSED: ${gateLabel(d.gate, id, this)}${by(d.by)}: ${str(d.message)}`];
      case 'GATE_REMINDED':
        return [`GATE_REMINDED: ${gateLabel(d.gate, id, this)}, nobody has answered yet`];
      case 'GATE_NOTICE_UNDELIVERED':
        return [
          `GATE_NOTICE_UNDELIVERED: ${gateLabel(d.gate, id, this)}: nobody was told (${str(d.message)})`,
        ];
      case 'GATE_DECISION_RECOVERED':
        return [
          `GATE_DECISION_RECOVERED: ${gateLabel(d.gate, id, this)}: its ${str(d.decision)}, cut short by a crash, reached the run`,
        ];
      case 'GATE_ESCALATED':
        return [
          `GATE_ESCALATED: ${gateLabel(d.gate, id, this)} timed out; now asking ${(d.approvers as string[]).join(', ')}`,
        ];
      case 'TASK_STARTED':
        this.started.set(id, at);
        return num(d.attempt) > 1
          ? [`${this.position(id)} ↻ ${this.name(id)} (attempt ${num(d.attempt)})`]
          : [];
      case 'TASK_COMPLETED': {
        const since = this.started.get(id);
        this.started.delete(id);
        const took = since === undefined ? '' : ` (${seconds(at - since)})`;
        const evidence = (d.evidence as { summary?: unknown } | undefined)?.summary;
        return [`${this.position(id)} ✓ ${this.name(id)}${took}${evidence ? ` — ${str(evidence)}` : ''}`];
      }
      case 'TASK_FAILED':
        this.started.delete(id);
        this.failedLine.add(id);
        return [`${this.position(id)} ✗ ${this.name(id)}: ${oneLine(str(d.error_message))}`];
      case 'TASK_SKIPPED':
        this.started.delete(id);
        return [`${this.position(id)} - ${this.name(id)}: skipped (${oneLine(str(d.reason))})`];
      case 'TASK_BLOCKED':
        this.started.delete(id);
        return [`${this.position(id)} ! ${this.name(id)}: blocked by ${list(d.blocked_by)}`];
      case 'FAILURE_DETECTED': {
        this.started.delete(id);
        // After the step's own ✗ line the message is already shown.
        const shown = this.failedLine.delete(id);
        return [
          `  FAILURE_DETECTED: ${shown ? str(d.error) : oneLine(str(d.error_message))} (attempt ${num(d.attempt)})`,
        ];
      }
      case 'FAILURE_CLASSIFIED':
        return [`  FAILURE_CLASSIFIED: ${str(d.failure_type)} (${str(d.error)})`];
      case 'RECOVERY_APPLIED':
        return [`RECOVERY_APPLIED: ${str(d.recipe_name)} → ${str(d.outcome)}`];
      case 'RECOVERY_ESCALATION':
        return d.user_decision === undefined
          ? [`RECOVERY_ESCALATION: ${this.name(id)}: ${oneLine(str(d.reason))}`]
          : [
              `RECOVERY_ESCALATION: ${this.name(id)} → ${str(d.user_decision)} (${str(d.decided_by ?? 'person')})`,
            ];
      case 'PERMISSION_REQUIRED':
        // A policy denial's message says what would allow the call; a retry would not.
        return d.policies !== undefined
          ? [`PERMISSION_REQUIRED: ${oneLine(str(d.message))}`]
          : [
              `PERMISSION_REQUIRED: ${oneLine(str(d.message))}`,
              '  Configure the credentials out of band (environment, vault, config file), then answer retry.',
            ];
      case 'POSTCONDITION_CHECKED': {
        const evidence = (d.evidence as { summary?: unknown } | undefined)?.summary;
        return [
          `Postcondition ${str(d.postcondition_id)} ${d.passed ? '✓' : '✗'}${evidence ? ` — ${str(evidence)}` : ''}`,
        ];
      }
      case 'ROLLBACK_STARTED':
        return [`${this.position(id)} ↶ ${this.name(id)}: rolling back${d.rehearsal ? ' (rehearsal)' : ''}`];
      case 'ROLLBACK_COMPLETED': {
        const evidence = (d.evidence as { summary?: unknown } | undefined)?.summary;
        return [
          `${this.position(id)} ↶ ${this.name(id)}: rolled back${evidence ? ` — ${str(evidence)}` : ''}`,
        ];
      }
      case 'ROLLBACK_FAILED':
        return [`${this.position(id)} ✗ ${this.name(id)}: rollback failed: ${oneLine(str(d.error_message))}`];
      case 'BUDGET_EXCEEDED':
        return [
          `BUDGET_EXCEEDED before "${this.name(id)}": ${str(d.limit)} used ${num(d.used)} of ${num(d.budget)} (retry continues with ${num(d.raised_to)})`,
        ];
      case 'EXECUTION_COMPLETE':
        this.started.clear();
        return [summaryLine(this.outline.steps.length, d)];
      default:
        return [`${event.event}${id ? `: ${this.name(id)}` : ''}`];
    }
  }

  /** `[Task N/M]` by the step's place in the plan. */
  position(stepId: string): string {
    const index = this.outline.steps.findIndex((s) => s.id === stepId);
    return `[Task ${index < 0 ? '?' : index + 1}/${this.outline.steps.length}]`;
  }

  name(stepId: string): string {
    return this.outline.steps.find((s) => s.id === stepId)?.description ?? stepId;
  }
}

/**
 * Seed 000's final line: `3/3 tasks completed. 0 failures.` (plus what was skipped, and why it
 * stopped); a rejected plan: `0/5 tasks completed. Plan rejected: <reason>.`
 */
export function summaryLine(total: number, details: Record<string, unknown>): string {
  const summary = (details.summary ?? {}) as Record<string, unknown>;
  if (details.error === MACHINE_ERRORS.gateRejected)
    return `${num(summary.completed)}/${total} tasks completed. Plan rejected: ${oneLine(str(details.reason)).replace(/\.$/, '')}.`;
  const failed = num(summary.failed);
  const skipped = num(summary.skipped);
  const parts = [
    `${num(summary.completed)}/${total} tasks completed.`,
    `${failed} failure${failed === 1 ? '' : 's'}.`,
  ];
  if (skipped > 0) parts.push(`${skipped} skipped or blocked.`);
  if (details.error !== undefined) parts.push(`Stopped: ${str(details.error)}.`);
  return parts.join(' ');
}

/** `4.1s`, or `2m 05s` for long steps. */
export function seconds(ms: number): string {
  if (ms < 60_000) return `${(Math.max(0, ms) / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

function gateLabel(gate: unknown, stepId: string, f: ProgressFormatter): string {
  if (gate === 'step') return `step gate before "${f.name(stepId)}"`;
  if (gate === 'escalation') return `escalation for "${f.name(stepId)}"`;
  if (gate === 'human') return `human step "${f.name(stepId)}"`;
  return 'plan gate';
}

function modifications(value: unknown): string {
  const m = value as { skipSteps?: unknown; argOverrides?: unknown } | undefined;
  if (!m) return '';
  const parts: string[] = [];
  if (Array.isArray(m.skipSteps) && m.skipSteps.length > 0) parts.push(`skip ${m.skipSteps.join(', ')}`);
  const overridden = m.argOverrides && typeof m.argOverrides === 'object' ? Object.keys(m.argOverrides) : [];
  if (overridden.length > 0) parts.push(`new args for ${overridden.join(', ')}`);
  return parts.length > 0 ? ` with modifications: ${parts.join('; ')}` : '';
}

const by = (approver: unknown): string => (typeof approver === 'string' && approver ? ` by ${approver}` : '');
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const list = (v: unknown): string => (Array.isArray(v) ? v.join(', ') : str(v));
const oneLine = (s: string): string => {
  const line = s.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
};

/** The checklist's mark for each status of seed 003's state file, and a note for those it has no mark of its own for. */
const CHECKLIST_MARK: Record<TaskStatus, { status: StepProgress; note?: string }> = {
  pending: { status: 'pending' },
  in_progress: { status: 'in_progress' },
  completed: { status: 'done' },
  failed: { status: 'failed' },
  blocked: { status: 'blocked' },
  skipped: { status: 'skipped' },
  rolling_back: { status: 'in_progress', note: 'rolling back' },
  rolled_back: { status: 'skipped', note: 'rolled back' },
  rollback_failed: { status: 'failed', note: 'rollback failed' },
};

/**
 * Seed 002's checklist state of an execution, from its events only: each step as seed 003's
 * state file shows it (lib/files), with its contract's evidence once done, and the postconditions checked.
 */
export function checklistStateOf(plan: Plan, events: readonly JournalRecord[]): ChecklistState {
  const evidence = new Map<string, string>();
  const postconditions = new Map<string, { satisfied: boolean; evidence?: string }>();
  for (const event of events) {
    const d = event.details as Record<string, unknown>;
    const summary = (d.evidence as { summary?: unknown } | undefined)?.summary;
    if (event.event === 'TASK_COMPLETED' && event.task_id && typeof summary === 'string')
      evidence.set(event.task_id, summary);
    if (event.event === 'POSTCONDITION_CHECKED')
      postconditions.set(str(d.postcondition_id), {
        satisfied: d.passed === true,
        evidence: typeof summary === 'string' ? summary : undefined,
      });
  }
  const steps = new Map<string, StepState>();
  for (const [id, { status, note }] of taskStatuses(plan, events)) {
    // Waiting for a person (approval, a report, a decision) is not trouble: no [!] for it.
    const waiting = status === 'blocked' && note.startsWith('awaiting_');
    const mark = waiting ? CHECKLIST_MARK.pending : CHECKLIST_MARK[status];
    const notes = waiting ? note.replace(/_/g, ' ') : note || mark.note;
    const proof = mark.status === 'done' ? evidence.get(id) : undefined;
    steps.set(id, {
      status: mark.status,
      ...(proof ? { evidence: proof } : {}),
      ...(notes ? { notes } : {}),
    });
  }
  return { steps, postconditions };
}
