/**
 * Policy where a step runs: just before the step runner calls the tool (or hands an agent step
 * to its worker), the platform's policy is asked whether this plan's submitter may run this step
 * with the arguments it resolved (values filled from earlier steps included; secret values
 * replaced). A denial is journaled (POLICY_DECISION) and thrown as a permission failure, which
 * the runner records and the step's recipe escalates to a person, as any permission failure.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { decisionDetails, PolicyDeniedError } from '../../policy/decisions.ts';
import {
  callAsRun,
  callFacts,
  planEntity,
  resolvedCallFacts,
  stepEntity,
  unknownPlanFacts,
} from '../../policy/entities.ts';
import type { PolicyDecision, PolicyRequest } from '../../policy/policy-set.ts';
import { type HarnessDeps, journalFor, policyFor } from '../deps.ts';
import type { JournalEventInput } from '../journal/journal.ts';
import type { PlanFacts, PlanIdentity, RecordedStep, RunnerRequest, StepFacts } from '../payloads/index.ts';
import { sandboxStatus } from '../sandbox/sandbox.ts';
import { Redactor } from '../secrets/redact.ts';
import { coveringGateCompletion } from './covering-gate.ts';
import { planCreatedOf } from './integrity.ts';

/** What an execution's PLAN_CREATED recorded for policy: the plan's facts, its submitter and its steps. */
export async function recordedPlan(
  dynamo: DynamoDBDocumentClient,
  eventsTable: string | undefined,
  executionId: string,
): Promise<{
  readonly facts: PlanFacts;
  readonly submitter?: string;
  /** A solo launch (`plangate run --solo`): its launcher approves it. */
  readonly solo: boolean;
  readonly steps?: Readonly<Record<string, RecordedStep>>;
}> {
  // Read once per execution (integrity.ts keeps it): PLAN_CREATED never changes.
  const details = await planCreatedOf(dynamo, eventsTable, executionId);
  if (!details) return { facts: unknownPlanFacts(), solo: false };
  return {
    facts: details.policy_facts ?? unknownPlanFacts(),
    submitter: details.submitted_by,
    solo: details.solo ?? false,
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

/** A call as policy judges it where it runs (call.ts's ResolvedCall, secret values still in). */
export interface JudgedCall {
  readonly tool: string;
  /** The args resolved: each value in its reference's place (ResolvedCall.judged). */
  readonly args: Record<string, unknown>;
  /**
   * The args as the step's gate approved them (its revision applied, no value filled in). When
   * the resolved call does more (destructive, unproven, other hosts), the gate's completion is
   * judged again on it. Absent for a rollback.
   */
  readonly approved?: Record<string, unknown>;
}

/**
 * Asks RunStep about the call the step (or its rollback) is about to make and, when the call does
 * more than its gate approved, CompleteGate again for that gate (covering-gate.ts). Throws
 * {@link PolicyDeniedError} (after POLICY_DECISION is journaled) when policy denies either.
 */
export async function authorizeRun(
  req: RunOf,
  deps: HarnessDeps,
  call: JudgedCall,
  secretValues: Iterable<string>,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
): Promise<void> {
  const policy = await policyFor(deps);
  const { facts, submitter } = await recordedPlan(deps.dynamo, deps.tables.events, req.executionId);
  // Policy reads the args as they run (a shell step's env values in their variables' places), never a secret's value.
  const redactor = new Redactor(secretValues);
  const asRun = callAsRun({ tool: call.tool, args: call.args });
  const args = redactor.secretValues(asRun.args);
  const known = facts.steps[req.stepId];
  const ownGate = known?.ownGate ?? false;
  const networkHosts = known?.networkHosts ?? [];
  const resolved = resolvedCallFacts(
    { tool: call.tool, target: req.target, args: redactor.secretValues(call.args), networkHosts },
    ownGate,
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
  const refuse = async (denied: PolicyRequest, decided: PolicyDecision, reason?: string) => {
    const details = decisionDetails(
      denied,
      decided,
      req.rollback ? 'the rollback did not run' : 'the step did not run',
      { tool: call.tool, args },
    );
    await journalFor(deps).append({
      ...identity,
      event: 'POLICY_DECISION',
      // Whatever was asked, what it decided is whether this call runs.
      details: {
        ...details,
        action: 'RunStep',
        ...(reason ? { reason: `${reason}: ${details.reason}` } : {}),
      },
    });
    throw new PolicyDeniedError(denied, decided);
  };
  const decided = policy.authorize(request);
  if (decided.decision === 'deny') return refuse(request, decided);
  if (req.rollback || call.approved === undefined) return;
  // As the gate judged it: its values (env's included) still references.
  const asApproved = callFacts(
    { tool: call.tool, target: req.target, args: call.approved, networkHosts },
    ownGate,
  );
  if (!doesMore(resolved, asApproved)) return;
  const completion = await coveringGateCompletion(
    deps,
    req,
    { ...facts, steps: { ...facts.steps, [req.stepId]: resolved } },
    submitter,
    policy,
  );
  if (!completion) return;
  const completed = policy.authorize(completion);
  if (completed.decision === 'deny')
    return refuse(
      completion,
      completed,
      'the call as it runs does more than its gate approved, and its gate is judged again',
    );
}

/** The resolved call does more than the call its gate approved: newly destructive, unproven, or reaching other hosts. */
function doesMore(resolved: StepFacts, approved: StepFacts): boolean {
  const unproven = (f: StepFacts) => f.unknown.length + f.exfiltration.length > 0;
  return (
    (resolved.destructive.length > 0 && approved.destructive.length === 0) ||
    (unproven(resolved) && !unproven(approved)) ||
    resolved.hosts.some((host) => !approved.hosts.includes(host))
  );
}
