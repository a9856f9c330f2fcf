/**
 * Submissions a crash cut short: launchPlan journals PLAN_CREATED, then starts the execution; a
 * crash in between leaves a plan the journal announces and the engine does not know, which nobody
 * would ever be asked to approve. Recovery finds each (PLAN_CREATED on the byEventType index, the
 * engine asked about its execution) and starts it as launchPlan would have (the name, machine
 * version and input PLAN_CREATED records: idempotent, so a start that did happen is not made
 * twice); the plan then waits at its gate, so nothing runs unapproved. A start that cannot be made
 * (its machine version is gone) closes the plan with the reason. Either way PLAN_START_RECOVERED
 * says so, once. `plangate serve` and `run` do it at start-up (LocalRunStack); on AWS, where a
 * Plans API Lambda can die between the two writes, it is a function the platform can call
 * (docs/api.md, "Crash consistency").
 */
import { DescribeExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { eventIdentity, type HarnessDeps, journalFor } from '../runtime/deps.ts';
import { queryItems, readEvents } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { startExecution } from './launch-plan.ts';

export interface PlanStartRecoveryDeps
  extends Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'telemetry' | 'anchor'> {
  readonly sfn: SFNClient;
}

/** Errors of a start that will never succeed: the plan is closed with the reason instead. */
const UNSTARTABLE = new Set(['StateMachineDoesNotExist', 'StateMachineDeleting', 'InvalidArn']);

/** Every submission a crash left unstarted, started (or closed); returns how many. */
export async function recoverPlanStarts(deps: PlanStartRecoveryDeps): Promise<number> {
  let recovered = 0;
  for await (const item of queryItems(deps.dynamo, {
    TableName: deps.tables.events,
    IndexName: 'byEventType',
    KeyConditionExpression: '#event = :created',
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: { ':created': 'PLAN_CREATED' },
    ProjectionExpression: 'executionId',
  }))
    if (await recoverPlanStart(String(item.executionId), deps)) recovered++;
  return recovered;
}

/**
 * Starts (or closes) one execution PLAN_CREATED announced if the engine does not know it and its
 * journal holds nothing the machine wrote; false when there was nothing to do.
 */
export async function recoverPlanStart(executionArn: string, deps: PlanStartRecoveryDeps): Promise<boolean> {
  if (await engineKnows(executionArn, deps.sfn)) return false;
  const records = await readEvents(deps.dynamo, deps.tables.events, executionArn);
  const [created] = records;
  // Anything but the launch's own records: the machine ran, and its engine forgot it; not a lost start.
  if (
    created?.event !== 'PLAN_CREATED' ||
    records.some((r) => r.event !== 'PLAN_CREATED' && r.event !== 'PLAN_START_RECOVERED')
  )
    return false;
  if (records.some((r) => r.event === 'PLAN_START_RECOVERED' && r.details.outcome === 'closed')) return false;
  const outcome = await startAgain(created, executionArn, deps);
  // Said once: a start made again after a crash that followed this very recovery is not news.
  if (!records.some((r) => r.event === 'PLAN_START_RECOVERED'))
    await journalFor(deps).append({
      ...eventIdentity({
        executionId: executionArn,
        plan: { id: created.planId, version: created.planVersion, digest: created.planDigest },
      }),
      event: 'PLAN_START_RECOVERED',
      details: outcome,
    });
  return true;
}

async function startAgain(
  created: JournalRecord,
  executionArn: string,
  deps: PlanStartRecoveryDeps,
): Promise<{ outcome: 'started' } | { outcome: 'closed'; reason: string }> {
  const integrity = created.details.integrity as { machines?: string[] } | undefined;
  const stateMachineVersionArn = integrity?.machines?.[0];
  if (stateMachineVersionArn === undefined)
    return {
      outcome: 'closed',
      reason:
        'its PLAN_CREATED names no state machine version (it was launched before executions were pinned)',
    };
  try {
    await startExecution(deps.sfn, {
      stateMachineVersionArn,
      executionArn,
      rehearseRollback: created.details.rehearse_rollback === true,
    });
    return { outcome: 'started' };
  } catch (error) {
    const name = error instanceof Error ? error.name : '';
    if (!UNSTARTABLE.has(name)) throw error;
    return {
      outcome: 'closed',
      reason: `its state machine version ${stateMachineVersionArn} cannot be started (${name}): submit the plan again`,
    };
  }
}

async function engineKnows(executionArn: string, sfn: SFNClient): Promise<boolean> {
  try {
    await sfn.send(new DescribeExecutionCommand({ executionArn }));
    return true;
  } catch (error) {
    if (error instanceof Error && error.name === 'ExecutionDoesNotExist') return false;
    throw error;
  }
}
