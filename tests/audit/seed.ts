/**
 * Seeds a real events table through the real Journal: two plans, three executions, with hostile
 * strings in a task name and in details, and timestamps an auditor can range over.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Journal, type JournalEventInput } from '../../lib/runtime/journal/journal.ts';

/** Strings a CSV consumer or a terminal would misread if they were not escaped. */
export const HOSTILE = {
  formula: '=HYPERLINK("http://evil.example","click")',
  dde: "=cmd|' /C calc'!A0",
  plus: '+1+2',
  minus: '-3',
  at: '@SUM(A1:A9)',
  tab: '\t=1',
  cr: '\r=1',
  apostrophe: "'=already guarded?",
  quotes: 'say "hi", then, bye',
  lines: 'one\r\ntwo\nthree\r',
  unicode: 'ünïcødé 😀 \u202egnp.exe',
  nul: 'a\u0000b',
  edges: '  padded  ',
} as const;

export const HOSTILE_TASK_NAME = '=1+1 "build", now\nplease';

export const EXEC = {
  deploy1: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-deploy:one',
  billing: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-billing:two',
  deploy2: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-deploy:three',
} as const;

/** The n-th second after the seed's epoch, as the journal writes timestamps. */
export const at = (second: number): string => new Date(Date.UTC(2025, 2, 1, 10, 0, second)).toISOString();

/** The six events of one run; `start` is the second of its first event. */
export function runEvents(
  executionId: string,
  planId: string,
  approver: string,
  start: number,
): JournalEventInput[] {
  const plan = { executionId, planId, planVersion: 1, planDigest: `sha256:${planId}-digest` };
  const task = { task_id: 'build', task_name: HOSTILE_TASK_NAME };
  return [
    {
      ...plan,
      event: 'PLAN_CREATED',
      timestamp: at(start),
      details: { task_count: 1, dependencies: { build: [] } },
    },
    {
      ...plan,
      event: 'GATE_APPROVAL_REQUESTED',
      timestamp: at(start + 1),
      details: { plan_id: planId, gate: 'plan', round: 1 },
    },
    { ...plan, event: 'GATE_APPROVED', timestamp: at(start + 2), details: { gate: 'plan', approver } },
    {
      ...plan,
      ...task,
      event: 'TASK_STARTED',
      timestamp: at(start + 3),
      details: { attempt: 1, progress: '[Task 1/1]' },
    },
    {
      ...plan,
      ...task,
      event: 'TASK_COMPLETED',
      timestamp: at(start + 4),
      details: {
        result: { ...HOSTILE },
        evidence: {
          kind: 'command',
          passed: true,
          summary: 'exit 0',
          excerpt: HOSTILE.lines,
          checkedAt: at(start + 4),
        },
        progress: '[Task 1/1]',
      },
    },
    {
      ...plan,
      event: 'EXECUTION_COMPLETE',
      timestamp: at(start + 5),
      details: { summary: { completed: 1, failed: 0, skipped: 0 }, succeeded: true },
    },
  ];
}

/** Appends the three runs: deploy1 (ana, seconds 0-5), billing (bo, 10-15), deploy2 (ana, 20-25). */
export async function seedRuns(doc: DynamoDBDocumentClient, eventsTable: string): Promise<void> {
  const journal = new Journal({ dynamo: doc, eventsTable });
  const runs = [
    runEvents(EXEC.deploy1, 'deploy', 'ana@example.com', 0),
    runEvents(EXEC.billing, 'billing', 'bo@example.com', 10),
    runEvents(EXEC.deploy2, 'deploy', 'ana@example.com', 20),
  ];
  for (const events of runs) for (const event of events) await journal.append(event);
}

/** Appends one more run of `deploy` (seconds 100-105) to be tampered with. */
export async function seedVictim(doc: DynamoDBDocumentClient, eventsTable: string, executionId: string) {
  const journal = new Journal({ dynamo: doc, eventsTable });
  for (const event of runEvents(executionId, 'deploy', 'cy@example.com', 100)) await journal.append(event);
}
