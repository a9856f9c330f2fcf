/**
 * Policy where a step runs: just before the step runner calls the tool (or hands an agent step
 * to its worker), the platform's policy is asked whether this plan's submitter may run this step
 * with the arguments it resolved (values filled from earlier steps included; secret values
 * replaced). A denial is journaled (POLICY_DECISION) and thrown as a permission failure, which
 * the runner records and the step's recipe escalates to a person, as any permission failure.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { decisionDetails, PolicyDeniedError } from '../../policy/decisions.ts';
import { callFacts, planEntity, stepEntity, unknownPlanFacts } from '../../policy/entities.ts';
import { type HarnessDeps, journalFor, policyFor } from '../deps.ts';
import type { JournalEventInput } from '../journal/journal.ts';
import type { PlanFacts, PlanIdentity, RecordedStep, RunnerRequest } from '../payloads/index.ts';
import { sandboxStatus } from '../sandbox/sandbox.ts';
import { Redactor } from '../secrets/redact.ts';
import { planCreatedOf } from './integrity.ts';

/** What an execution's PLAN_CREATED recorded for policy: the plan's facts, its submitter and its steps. */
export async function recordedPlan(
  dynamo: DynamoDBDocumentClient,
  eventsTable: string | undefined,
  executionId: string,
): Promise<{
  readonly facts: PlanFacts;
  readonly submitter?: string;
  readonly steps?: Readonly<Record<string, RecordedStep>>;
}> {
  // Read once per execution (integrity.ts keeps it): PLAN_CREATED never changes.
  const details = await planCreatedOf(dynamo, eventsTable, executionId);
  if (!details) return { facts: unknownPlanFacts() };
  return {
    facts: details.policy_facts ?? unknownPlanFacts(),
    submitter: details.submitted_by,
    steps: details.steps,
  };
}

/** Which call is about to be made: a step's own (RunnerRequest) or its rollback's. */
export interface RunOf {
  readonly executionId: string;
  readonly plan: PlanIdentity;
  readonly stepId: string;
  readonly target?: string;
  readonly attempt: number;
  /** The call undoes the step (seed 003's rollback), on abort or rehearsed. */
  readonly rollback: boolean;
}

/** A step runner's request as the call it is about to make. */
export function runOf(req: RunnerRequest): RunOf {
  return {
    executionId: req.executionId,
    plan: req.plan,
    stepId: req.stepId,
    target: req.target,
    attempt: req.attempt,
    rollback: false,
  };
}

/**
 * Asks RunStep about the call the step (or its rollback) is about to make. Throws
 * {@link PolicyDeniedError} (after POLICY_DECISION is journaled) when policy denies it.
 */
export async function authorizeRun(
  req: RunOf,
  deps: HarnessDeps,
  call: { readonly tool: string; readonly args: Record<string, unknown> },
  secretValues: Iterable<string>,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
): Promise<void> {
  const policy = await policyFor(deps);
  const { facts, submitter } = await recordedPlan(deps.dynamo, deps.tables.events, req.executionId);
  // Policy reads the args, never a secret's value.
  const args = new Redactor(secretValues).secretValues(call.args);
  const known = facts.steps[req.stepId];
  const resolved = callFacts(
    { tool: call.tool, target: req.target, args, networkHosts: known?.networkHosts ?? [] },
    known?.ownGate ?? false,
  );
  const request = {
    principal: { name: submitter ?? '' },
    action: 'RunStep' as const,
    resource: stepEntity(req.plan, req.stepId, resolved, {
      submitter,
      args,
    }),
    entities: [planEntity(req.plan, facts, submitter)],
    // Whether the step's processes run in the sandbox here: a platform policy may refuse them unsandboxed.
    context: { attempt: req.attempt, rollback: req.rollback, sandboxed: sandboxStatus().kind === 'bwrap' },
  };
  const decided = policy.authorize(request);
  if (decided.decision === 'allow') return;
  await journalFor(deps).append({
    ...identity,
    event: 'POLICY_DECISION',
    details: decisionDetails(
      request,
      decided,
      req.rollback ? 'the rollback did not run' : 'the step did not run',
      { tool: call.tool, args },
    ),
  });
  throw new PolicyDeniedError(request, decided);
}
