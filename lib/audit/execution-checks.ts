/**
 * What `plangate audit verify` checks of each execution besides its hash chain: that what ran is
 * what was approved. Each check is a plain function of the execution's records (and of the
 * engine, when it is reachable) that returns its problems; `EXECUTION_CHECKS` is the list verify
 * runs, in order, so a new check is one more entry.
 */
import type { z } from 'zod';
import { fromItem } from '../runtime/journal/journal.ts';
import { EVENT_DETAILS, type IntegrityPin, type JournalRecord } from '../runtime/payloads/index.ts';
import { type DefinitionReader, runningDefinitionHash } from '../runtime/steps/integrity.ts';
import { approvedCallProblems } from './approved-calls.ts';

/** What a check reads of one execution. */
export interface ExecutionUnderAudit {
  readonly executionId: string;
  /** Its stored events in sequence order (items that are not records left out: the chain check reports them). */
  readonly records: readonly JournalRecord[];
  /** The definitions its engine runs, when the store or Step Functions is reachable. */
  readonly definitions?: DefinitionReader;
}

/** One failed check: which, where (the event's sequence number, when one event is at fault) and why. */
export interface ExecutionCheckProblem {
  readonly check: string;
  readonly seq?: number;
  readonly message: string;
}

export interface ExecutionCheck {
  /** Names the check in reports, e.g. `approved-definition`. */
  readonly name: string;
  readonly problems: (
    execution: ExecutionUnderAudit,
  ) => Promise<readonly Omit<ExecutionCheckProblem, 'check'>[]>;
}

type PlanCreated = z.infer<(typeof EVENT_DETAILS)['PLAN_CREATED']>;

function pinOf(records: readonly JournalRecord[]): IntegrityPin | undefined {
  const first = records[0];
  if (first?.event !== 'PLAN_CREATED') return undefined;
  const parsed = EVENT_DETAILS.PLAN_CREATED.safeParse(first.details);
  return parsed.success ? (parsed.data as PlanCreated).integrity : undefined;
}

/** Each plan-gate approval bound the definition PLAN_CREATED pinned. */
const approvedDefinition: ExecutionCheck = {
  name: 'approved-definition',
  problems: async ({ records }) => {
    const pin = pinOf(records);
    if (!pin) return [];
    return records
      .filter((r) => r.event === 'GATE_APPROVED' && r.details.gate === 'plan')
      .filter((r) => r.details.definition_hash !== pin.definition_hash)
      .map((r) => ({
        seq: r.seq,
        message:
          r.details.definition_hash === undefined
            ? `the plan gate's approval binds no definition; PLAN_CREATED pinned ${pin.definition_hash}`
            : `the plan gate approved definition ${String(r.details.definition_hash)}, not the one PLAN_CREATED pinned (${pin.definition_hash})`,
      }));
  },
};

/**
 * Every INTEGRITY_MISMATCH is answered: the execution ended after it. One still open runs (or
 * waits) on a definition or policy set nobody approved.
 */
const answeredMismatches: ExecutionCheck = {
  name: 'integrity-mismatch',
  problems: async ({ records }) => {
    const ended = records.findLast((r) => r.event === 'EXECUTION_COMPLETE')?.seq ?? 0;
    return records
      .filter((r) => r.event === 'INTEGRITY_MISMATCH' && r.seq > ended)
      .map((r) => ({
        seq: r.seq,
        message: `unanswered: ${String(r.details.check)} check at ${String(r.details.at)} expected ${String(r.details.expected)}, found ${String(r.details.found)}, and the execution has not ended since`,
      }));
  },
};

/** The definition the engine holds for the execution now hashes to the pinned one. */
const engineDefinition: ExecutionCheck = {
  name: 'engine-definition',
  problems: async ({ executionId, records, definitions }) => {
    const pin = pinOf(records);
    if (!pin || !definitions) return [];
    const found = await runningDefinitionHash(definitions, executionId, pin.machines);
    return found === pin.definition_hash
      ? []
      : [
          {
            message: `the engine's definition hashes to ${found}, not to the approved ${pin.definition_hash}`,
          },
        ];
  },
};

/** Every step's call is its approved call with its recorded values filled in (approved-calls.ts). */
const approvedCalls: ExecutionCheck = { name: 'approved-calls', problems: approvedCallProblems };

/** The checks verify runs of each execution, in order. */
export const EXECUTION_CHECKS: readonly ExecutionCheck[] = [
  approvedDefinition,
  answeredMismatches,
  engineDefinition,
  approvedCalls,
];

/** Every problem the checks find in one execution's raw items (records with their table keys). */
export async function executionCheckProblems(
  executionId: string,
  items: readonly Record<string, unknown>[],
  definitions?: DefinitionReader,
  checks: readonly ExecutionCheck[] = EXECUTION_CHECKS,
): Promise<ExecutionCheckProblem[]> {
  const records = items.filter((item) => typeof item.event === 'string').map(fromItem);
  const execution = { executionId, records, definitions };
  const problems: ExecutionCheckProblem[] = [];
  for (const check of checks)
    for (const problem of await check.problems(execution)) problems.push({ check: check.name, ...problem });
  return problems;
}
