/**
 * `approved-calls`, one of `plangate audit verify`'s execution checks: every call a step made
 * (TASK_STARTED's `call`) is that step's call as approved — its args as PLAN_CREATED recorded them,
 * with the changes approvers made (a plan gate's or the step's own gate's modifications, a retry
 * with changed args a person accepted) — with its recorded values filled in the way the harness
 * fills them. A shell command is recomputed exactly (`fillShellCommand`: the text bash ran names
 * the variables, never the values); a URL too when no secret is in it (`fillUrl`); for any call,
 * every value it was given must be a reference the approved args hold.
 */
import { referencesInValue } from '../plan/references.ts';
import { CallSchema, EVENT_DETAILS, type JournalRecord } from '../runtime/payloads/index.ts';
import { REDACTED } from '../runtime/secrets/redact.ts';
import { fillShellCommand } from '../runtime/secrets/shell-command.ts';
import { fillUrl } from '../runtime/secrets/url-binding.ts';

type Args = Record<string, unknown>;

/** What the approvers approved of each step so far, replayed in journal order. */
class ApprovedCalls {
  private readonly overrides = new Map<string, Args>();
  private readonly suggested = new Map<string, Args>();

  constructor(private readonly recorded: Readonly<Record<string, { tool: string; args: string }>>) {}

  /** Takes in what `record` approved (or proposed) about a step's args. */
  observe(record: JournalRecord): void {
    if (record.event === 'GATE_APPROVED') {
      const approved = EVENT_DETAILS.GATE_APPROVED.safeParse(record.details);
      const byStep = approved.success ? approved.data.modifications?.argOverrides : undefined;
      for (const [stepId, changed] of Object.entries(byStep ?? {})) this.override(stepId, changed as Args);
    } else if (record.event === 'RECOVERY_SUGGESTED' && record.task_id) {
      const suggested = EVENT_DETAILS.RECOVERY_SUGGESTED.safeParse(record.details);
      if (suggested.success && suggested.data.strategy === 'retry_with_args' && suggested.data.args)
        this.suggested.set(record.task_id, suggested.data.args);
    } else if (record.event === 'RECOVERY_ESCALATION' && record.task_id) {
      const suggested = this.suggested.get(record.task_id);
      if (suggested && record.details.suggestion === 'accepted') this.override(record.task_id, suggested);
      this.suggested.delete(record.task_id);
    }
  }

  /** The tool and args `stepId` is approved to run with now; a string when they cannot be known. */
  of(stepId: string): { tool: string; args: Args } | string {
    const recorded = this.recorded[stepId];
    if (!recorded) return `PLAN_CREATED recorded no step "${stepId}"`;
    let args: unknown;
    try {
      args = JSON.parse(recorded.args);
    } catch {
      return `PLAN_CREATED's record of step "${stepId}" is not whole`;
    }
    return { tool: recorded.tool, args: { ...(args as Args), ...this.overrides.get(stepId) } };
  }

  private override(stepId: string, changed: Args): void {
    this.overrides.set(stepId, { ...this.overrides.get(stepId), ...changed });
  }
}

/** Why `call` is not `approved` with its values filled in; undefined when it is. */
function mismatch(
  approved: { tool: string; args: Args },
  call: ReturnType<typeof CallSchema.parse>,
): string | undefined {
  if (call.tool !== approved.tool)
    return `the call ran tool ${call.tool}; the step was approved to run ${approved.tool}`;
  const known = new Set(referencesInValue(approved.args).map((r) => r.raw));
  const foreign = call.values.find((v) => !known.has(v.ref));
  if (foreign) return `the call was given ${foreign.ref}, which the approved args do not reference`;
  const values = new Map(call.values.map((v) => [v.ref, v.value]));
  if (call.tool === 'shell' && typeof approved.args.command === 'string') {
    const filled = fillShellCommand(approved.args.command, values);
    if (call.ran.command !== filled.command)
      return `the command that ran is not the approved command with its values filled in (expected ${JSON.stringify(filled.command)}, ran ${JSON.stringify(call.ran.command)})`;
    const env = new Set([...Object.keys((approved.args.env ?? {}) as Args), ...Object.keys(filled.env)]);
    const ranEnv = new Set(call.ran.env as string[]);
    if (env.size !== ranEnv.size || [...env].some((name) => !ranEnv.has(name)))
      return `the command was given the environment ${[...ranEnv].sort().join(', ')}; the approved call gives ${[...env].sort().join(', ')}`;
  } else if (call.tool === 'http' && typeof approved.args.url === 'string') {
    if (call.values.some((v) => v.value === REDACTED)) return undefined;
    const url = fillUrl(approved.args.url, values);
    if (call.ran.url !== url)
      return `the request went to ${JSON.stringify(call.ran.url)}, not to the approved URL with its values filled in (${JSON.stringify(url)})`;
    if (call.ran.method !== approved.args.method)
      return `the request was ${String(call.ran.method)}, approved as ${String(approved.args.method)}`;
  }
  return undefined;
}

/** The check's problems in one execution's records (in sequence order), each at the TASK_STARTED at fault. */
export async function approvedCallProblems({
  records,
}: {
  readonly records: readonly JournalRecord[];
}): Promise<{ seq?: number; message: string }[]> {
  const created = records[0]?.event === 'PLAN_CREATED' ? records[0] : undefined;
  const details = created ? EVENT_DETAILS.PLAN_CREATED.safeParse(created.details) : undefined;
  const started = records.filter((r) => r.event === 'TASK_STARTED' && r.details.call !== undefined);
  if (started.length === 0) return [];
  const recorded = details?.success ? details.data.steps : undefined;
  if (!recorded)
    return [
      {
        message: `${started.length} call(s) cannot be checked: PLAN_CREATED did not record the plan's steps (a plan over the record's limit)`,
      },
    ];
  const approved = new ApprovedCalls(recorded);
  const problems: { seq: number; message: string }[] = [];
  for (const record of records) {
    approved.observe(record);
    if (record.event !== 'TASK_STARTED' || record.details.call === undefined || !record.task_id) continue;
    const call = CallSchema.safeParse(record.details.call);
    const expected = approved.of(record.task_id);
    const why = !call.success
      ? `its call record is malformed: ${call.error.issues[0]?.message ?? 'unreadable'}`
      : typeof expected === 'string'
        ? `its call cannot be checked: ${expected}`
        : checked(() => mismatch(expected, call.data));
    if (why) problems.push({ seq: record.seq, message: `step "${record.task_id}": ${why}` });
  }
  return problems;
}

/** A fill that throws (a value the approved text cannot hold) is itself a mismatch. */
function checked(check: () => string | undefined): string | undefined {
  try {
    return check();
  } catch (error) {
    return `its values do not fit the approved call: ${(error as Error).message}`;
  }
}
