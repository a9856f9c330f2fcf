/**
 * Launching a validated plan: refuse a plan id and version already launched with other content,
 * deploy it (lib/launch/deploy-plan.ts: one state machine version per plan version, idempotent
 * per digest), write PLAN_CREATED as the execution's first event, then start the execution on
 * that version. The execution's name is chosen first, so its ARN is known before it exists and
 * nothing the machine writes can come before PLAN_CREATED.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { z } from 'zod';
import { canonicalJson, planDigest } from '../plan/digest.ts';
import { principalName } from '../plan/principal-names.ts';
import type { Plan } from '../plan/schema.ts';
import { decisionDetails, PolicyDeniedError } from '../policy/decisions.ts';
import { planEntity, planFacts } from '../policy/entities.ts';
import { type PolicyPrincipal, PolicySet } from '../policy/policy-set.ts';
import { eventIdentity, type HarnessDeps, journalFor } from '../runtime/deps.ts';
import { MAX_EVENT_BYTES, queryItems } from '../runtime/journal/journal.ts';
import { storePlan } from '../runtime/journal/stored-plans.ts';
import type { EVENT_DETAILS, PolicyOverride, RecordedStep } from '../runtime/payloads/index.ts';
import { crashPoint } from '../runtime/shared/crash-points.ts';
import { HarnessError } from '../runtime/shared/errors.ts';
import { type DeployedPlan, type DeployPlanInput, deployPlan } from './deploy-plan.ts';

export interface LaunchPlanInput extends DeployPlanInput {
  /** The journal's tables and bus. */
  readonly journal: Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'telemetry'>;
  /** @default a random UUID */
  readonly executionName?: string;
  /** Who submitted the plan (an IAM ARN, a user name), recorded in PLAN_CREATED. @default - not recorded */
  readonly submittedBy?: string;
  /**
   * The IAM principal that signed the submission, when the policy's people file made it the person
   * `submittedBy` names (PLAN_CREATED {submitted_by_principal}). @default - the submitter is the principal
   */
  readonly submitterPrincipal?: string;
  /** How a model drafted this plan, recorded in PLAN_CREATED {planner}. @default - written by a person */
  readonly planner?: PlannerDetails;
  /**
   * Run the completed steps' rollbacks after the plan succeeded (seed 003's rollback
   * verification); the machine reads it as `rehearseRollback` from its input. @default false
   */
  readonly rehearseRollback?: boolean;
  /** The platform's policy, asked SubmitPlan before anything is stored. @default PolicySet.fromEnvironment() */
  readonly policy?: PolicySet;
  /**
   * Who asks to submit, as policy sees them (with groups a verified request carries).
   * @default { name: submittedBy } ("" when nobody is recorded)
   */
  readonly principal?: PolicyPrincipal;
  /** Where the plan comes from (the SubmitPlan context's `channel`). @default 'api' */
  readonly channel?: SubmitChannel;
  /**
   * The principal overrides the soft-mandatory policies that would refuse the submission, with
   * this reason (recorded in PLAN_CREATED). @default - no override
   */
  readonly policyOverride?: string;
  /**
   * Who started the run on this machine (`plangate run`), recorded in PLAN_CREATED: the identity it
   * answers as, the OS user it runs as, and whether it is a solo run (the launcher approves their own
   * plan, on the record; the SubmitPlan context's `solo`). @default - not launched from a terminal
   */
  readonly launch?: PlanLaunch;
}

/** Who started a `plangate run` (PLAN_CREATED {launched_by, os_user, solo}). */
export interface PlanLaunch {
  /** The identity the run answers gates as (`--as`, else the OS user). */
  readonly by: string;
  /** The operating system's user running the command: what the machine itself says. */
  readonly osUser: string;
  /** No submitter is recorded: the launcher may approve their own plan (`--solo`, `--approve`). */
  readonly solo: boolean;
}

/** Where a submission comes from: the Plans API, `plangate run`, or the planner's draft. */
export type SubmitChannel = 'api' | 'cli' | 'planner';

/** What launching a plan at run time (the Plans API, the planner) needs: Step Functions, the journal, the platform's settings. */
export interface RuntimeLaunchDeps
  extends Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'telemetry'> {
  readonly sfn: SFNClient;
  /** The role run-time plans' state machines run with. */
  readonly roleArn: string;
  /** Placeholder name → harness function ARN (the platform's PLANGATE_SUBSTITUTIONS). */
  readonly substitutions: Readonly<Record<string, string>>;
  /** @default 'plangate' */
  readonly namePrefix?: string;
  /** @default - no logging */
  readonly logGroupArn?: string;
  /** The platform's policy. @default PolicySet.fromEnvironment() */
  readonly policy?: PolicySet;
}

/** Launches a validated plan with the platform's run-time settings. */
export function launchAtRunTime(
  deps: RuntimeLaunchDeps,
  plan: Plan,
  launch: Pick<
    LaunchPlanInput,
    | 'submittedBy'
    | 'submitterPrincipal'
    | 'planner'
    | 'executionName'
    | 'compiled'
    | 'principal'
    | 'channel'
    | 'policyOverride'
  >,
): Promise<LaunchedPlan> {
  return launchPlan({
    policy: deps.policy,
    sfn: deps.sfn,
    plan,
    roleArn: deps.roleArn,
    substitutions: deps.substitutions,
    ...(deps.namePrefix ? { namePrefix: deps.namePrefix } : {}),
    logGroupArn: deps.logGroupArn,
    journal: deps,
    ...launch,
  });
}

/** PLAN_CREATED's account of a planned plan (see the event's schema). */
export type PlannerDetails = NonNullable<z.infer<(typeof EVENT_DETAILS)['PLAN_CREATED']>['planner']>;

export interface LaunchedPlan {
  readonly executionArn: string;
  readonly deployed: DeployedPlan;
}

/**
 * A plan id and version already launched with other content: one version number names one
 * content, so the approvals, the journal and the audit never mean two plans by it.
 */
export class PlanVersionConflictError extends HarnessError {
  constructor(
    readonly plan: { readonly id: string; readonly version: number },
    readonly storedDigest: string,
    readonly submittedDigest: string,
  ) {
    super(
      'PlanVersionConflict',
      `plan ${plan.id} v${plan.version} was already submitted with digest ${storedDigest}; this one has digest ${submittedDigest}: bump the version to submit other content`,
      { httpStatus: 409, location: 'version' },
    );
  }
}

/**
 * Throws {@link PlanVersionConflictError} when a PLAN_CREATED of the plan's id and version holds
 * another digest (the events table's byPlan index); the same content again is welcome.
 */
export async function checkVersionUnused(
  plan: Plan,
  digest: string,
  journal: Pick<HarnessDeps, 'dynamo' | 'tables'>,
): Promise<void> {
  for await (const item of queryItems(journal.dynamo, {
    TableName: journal.tables.events,
    IndexName: 'byPlan',
    KeyConditionExpression: 'planId = :plan',
    FilterExpression: '#event = :created AND planVersion = :version AND planDigest <> :digest',
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: {
      ':plan': plan.id,
      ':created': 'PLAN_CREATED',
      ':version': plan.version,
      ':digest': digest,
    },
  }))
    throw new PlanVersionConflictError(plan, String(item.planDigest), digest);
}

/**
 * Claims the plan's id and version for its content (the versions table's conditional put): the
 * first launch of a version claims it; the same content again is welcome; other content is
 * refused with {@link PlanVersionConflictError}, atomically, however close together two come.
 */
export async function claimVersion(
  plan: Plan,
  digest: string,
  journal: Pick<HarnessDeps, 'dynamo' | 'tables'>,
): Promise<void> {
  const planVersion = `${plan.id}#v${plan.version}`;
  try {
    await journal.dynamo.send(
      new PutCommand({
        TableName: journal.tables.versions,
        Item: {
          planVersion,
          planId: plan.id,
          version: plan.version,
          planDigest: digest,
          claimedAt: new Date().toISOString(),
        },
        ConditionExpression: 'attribute_not_exists(planVersion) OR planDigest = :digest',
        ExpressionAttributeValues: { ':digest': digest },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const stored = await journal.dynamo.send(
      new GetCommand({ TableName: journal.tables.versions, Key: { planVersion }, ConsistentRead: true }),
    );
    throw new PlanVersionConflictError(plan, String(stored.Item?.planDigest ?? 'unknown'), digest);
  }
}

/**
 * A plan whose PLAN_CREATED would not fit one journal record (MAX_EVENT_BYTES): it records every
 * step's dependencies and the facts every later policy decision judges, so its size grows with
 * the steps. Refused before anything is stored or deployed.
 */
export class PlanTooLargeError extends HarnessError {
  constructor(message: string) {
    super('PlanTooLarge', message, { httpStatus: 400, location: 'steps' });
  }
}

/** Room in PLAN_CREATED for what is known only at launch: identity, submitter, policies, the machines' ARNs. */
const LAUNCH_RECORD_ROOM_BYTES = 16 * 1024;

/**
 * Why the plan cannot be launched because its PLAN_CREATED would not fit one journal record, with
 * the limit and how many such steps would; undefined when it fits. Cheap next to validating and
 * compiling (a 10,000-step plan: a fifth of a second), so the Plans API asks it first.
 */
export function planRecordProblem(plan: Plan, facts = planFacts(plan)): string | undefined {
  const bytes =
    Buffer.byteLength(JSON.stringify({ ...planCreatedDetails(plan), policy_facts: facts })) +
    LAUNCH_RECORD_ROOM_BYTES;
  if (bytes <= MAX_EVENT_BYTES) return undefined;
  const fits = Math.floor((plan.steps.length * MAX_EVENT_BYTES) / bytes);
  return `the plan's ${plan.steps.length} steps are too many for one run: its PLAN_CREATED (each step's dependencies and the facts policy judges) would be about ${bytes} bytes, and a journal record holds at most ${MAX_EVENT_BYTES} bytes (DynamoDB's item limit); about ${fits} steps like these fit: split the plan into smaller plans`;
}

export async function launchPlan(given: LaunchPlanInput): Promise<LaunchedPlan> {
  // The submitter in the one spelling every later comparison uses (no-self-approval, policy).
  const input =
    given.submittedBy === undefined ? given : { ...given, submittedBy: principalName(given.submittedBy) };
  const digest = `sha256:${planDigest(input.plan)}`;
  // Before anything is deployed: policy first (a refusal is journaled on its own), then the version
  // (the versions table's claim; versions launched before it existed are in the journal only).
  const tooLarge = planRecordProblem(input.plan);
  if (tooLarge) throw new PlanTooLargeError(tooLarge);
  const submission = await authorizeSubmission(input, digest);
  await checkVersionUnused(input.plan, digest, input.journal);
  await claimVersion(input.plan, digest, input.journal);
  // Whole, by digest: the approval page shows every command from it (the gate's own view is cut to fit).
  await storePlan(input.journal.dynamo, input.journal.tables.plans, input.plan);
  const deployed = await deployPlan(input);
  const name = input.executionName ?? randomUUID();
  const executionArn = `${deployed.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  await journalFor(input.journal).append({
    ...eventIdentity({ executionId: executionArn, plan: planIdentity(input.plan, deployed.digest) }),
    event: 'PLAN_CREATED',
    details: {
      ...planCreatedDetails(input.plan),
      ...(input.submittedBy !== undefined ? { submitted_by: input.submittedBy } : {}),
      ...(input.submitterPrincipal !== undefined ? { submitted_by_principal: input.submitterPrincipal } : {}),
      ...(input.launch
        ? {
            launched_by: principalName(input.launch.by),
            os_user: input.launch.osUser,
            solo: input.launch.solo,
          }
        : {}),
      ...(input.planner ? { planner: input.planner } : {}),
      // What the execution's input says, so a start a crash cut short is made again as it was.
      ...(input.rehearseRollback ? { rehearse_rollback: true } : {}),
      policy_facts: submission.facts,
      permitted_by: [...submission.permittedBy],
      ...(submission.override ? { policy_override: submission.override } : {}),
      ...(submission.advisory ? { policy_advisory: submission.advisory } : {}),
      // What the gate approves and the engine must run: every later start, step and resume compares.
      integrity: {
        definition_hash: deployed.definitionHash,
        machines: [
          deployed.stateMachineVersionArn,
          ...deployed.parts.map((part) => part.stateMachineVersionArn),
        ],
        policy_hash: submission.policyDigest,
      },
    },
  });
  crashPoint('plan-journaled');
  await startExecution(input.sfn, {
    stateMachineVersionArn: deployed.stateMachineVersionArn,
    executionArn,
    rehearseRollback: input.rehearseRollback === true,
  });
  crashPoint('plan-started');
  return { executionArn, deployed };
}

/** What starts a journaled plan's execution: the machine version PLAN_CREATED pins, the name its ARN ends in, the input. */
export interface PlanStart {
  readonly stateMachineVersionArn: string;
  readonly executionArn: string;
  readonly rehearseRollback: boolean;
}

/**
 * Starts the execution PLAN_CREATED announced. Idempotent: Step Functions answers a start of a
 * running execution with the same name and input with that execution, so a start made again after
 * a crash (lib/launch/plan-start-recovery.ts) cannot make a second one.
 */
export async function startExecution(sfn: SFNClient, start: PlanStart): Promise<void> {
  const name = start.executionArn.slice(start.executionArn.lastIndexOf(':') + 1);
  const started = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: start.stateMachineVersionArn,
      name,
      input: start.rehearseRollback ? '{"rehearseRollback":true}' : '{}',
    }),
  );
  if (started.executionArn !== start.executionArn)
    throw new Error(
      `Step Functions named the execution ${started.executionArn}, expected ${start.executionArn}`,
    );
}

/**
 * Asks the platform's policy whether this principal may submit this plan (SubmitPlan, with the
 * facts the harness computed about it). A refusal throws {@link PolicyDeniedError} naming the
 * policies that decided, after POLICY_DECISION is journaled in a stream of its own
 * (`submission-refused:<uuid>`, found by the plan's id): no execution exists, nothing is deployed.
 */
async function authorizeSubmission(
  input: LaunchPlanInput,
  digest: string,
): Promise<{
  facts: ReturnType<typeof planFacts>;
  permittedBy: readonly string[];
  policyDigest: string;
  override?: PolicyOverride;
  advisory?: string[];
}> {
  const policy = input.policy ?? (await PolicySet.fromEnvironment());
  const facts = planFacts(input.plan, { planned: input.planner !== undefined });
  const identity = { id: input.plan.id, version: input.plan.version, digest };
  const request = {
    principal: input.principal ?? { name: input.submittedBy ?? '' },
    action: 'SubmitPlan' as const,
    resource: planEntity(identity, facts, input.submittedBy),
    context: { channel: input.channel ?? 'api', solo: input.launch?.solo ?? false },
  };
  const asked = policy.authorize(request);
  const released =
    asked.decision === 'deny' && input.policyOverride !== undefined
      ? policy.override(asked, request.principal, input.policyOverride)
      : asked;
  const decided = typeof released === 'string' ? asked : released;
  if (decided.decision === 'allow')
    return {
      facts,
      permittedBy: decided.determiningPolicies,
      policyDigest: policy.digest,
      ...(decided.overridden
        ? { override: { ...decided.overridden, policies: [...decided.overridden.policies] } }
        : {}),
      ...(decided.advisory?.length ? { advisory: [...decided.advisory] } : {}),
    };
  const refusedOverride = typeof released === 'string' ? `override refused: ${released}` : undefined;
  await journalFor(input.journal).append({
    ...eventIdentity({ executionId: `submission-refused:${randomUUID()}`, plan: identity }),
    event: 'POLICY_DECISION',
    details: decisionDetails(
      request,
      decided,
      refusedOverride ? `the plan was not submitted (${refusedOverride})` : 'the plan was not submitted',
    ),
  });
  throw new PolicyDeniedError(request, decided, refusedOverride);
}

/** Seed 000's PLAN_CREATED {task_count, dependencies}, each step's tool, args and contract, and the context. */
export function planCreatedDetails(plan: Plan): {
  task_count: number;
  dependencies: Record<string, string[]>;
  steps?: Record<string, RecordedStep>;
  context?: Record<string, unknown>;
} {
  const steps = recordedSteps(plan);
  const context = recordedContext(plan);
  return {
    task_count: plan.steps.length,
    dependencies: Object.fromEntries(plan.steps.map((s) => [s.id, [...s.dependsOn]])),
    ...(steps ? { steps } : {}),
    ...(context ? { context } : {}),
  };
}

/** Largest context recorded, in JSON bytes; a larger one is not recorded (an abort's list then shows its references). */
const RECORDED_CONTEXT_LIMIT_BYTES = 16 * 1024;

/** The plan's context as PLAN_CREATED records it; undefined when empty or too large. */
function recordedContext(plan: Plan): Record<string, unknown> | undefined {
  if (Object.keys(plan.context).length === 0) return undefined;
  return Buffer.byteLength(JSON.stringify(plan.context)) <= RECORDED_CONTEXT_LIMIT_BYTES
    ? plan.context
    : undefined;
}

/**
 * Longest contract recorded per step: enough to read a change, small in the journal. Args are
 * recorded whole: they are what `plangate audit verify` checks each TASK_STARTED's call against.
 */
const RECORDED_VALUE_LIMIT = 300;
/** Largest record of all steps, in JSON bytes; a larger plan's PLAN_CREATED records none. */
const RECORDED_STEPS_LIMIT_BYTES = 64 * 1024;

/**
 * What each step is given and checked by, for a later version's gate to show old → new (the
 * gate's graph holds only fingerprints). Plans reference secrets, never hold them, so nothing
 * here is secret; undefined when the plan is too large to record.
 */
export function recordedSteps(plan: Plan): Record<string, RecordedStep> | undefined {
  const steps: Record<string, RecordedStep> = {};
  let bytes = 2;
  for (const step of plan.steps) {
    const { tool, args, target, task, subscriptions, contract, rollback } = step;
    const recorded: RecordedStep = {
      tool: tool ?? 'agent',
      args: canonicalJson(tool ? (args ?? {}) : { target, task, subscriptions }),
      ...(contract ? { contract: shortened(canonicalJson(contract)) } : {}),
      // Whole, not shortened: an escalation fills its values in and shows it as the abort will run it.
      ...(rollback ? { rollback: canonicalJson({ tool: rollback.tool, args: rollback.args }) } : {}),
    };
    bytes += Buffer.byteLength(JSON.stringify([step.id, recorded])) + 1;
    if (bytes > RECORDED_STEPS_LIMIT_BYTES) return undefined;
    steps[step.id] = recorded;
  }
  return steps;
}

function shortened(text: string): string {
  return text.length > RECORDED_VALUE_LIMIT ? `${text.slice(0, RECORDED_VALUE_LIMIT - 1)}…` : text;
}

function planIdentity(plan: Plan, digestHex: string) {
  return { id: plan.id, version: plan.version, digest: `sha256:${digestHex}` };
}
