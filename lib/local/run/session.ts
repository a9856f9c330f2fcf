/**
 * One `plangate run` / `plangate resume`: the local stack up, the plan deployed through
 * @aws-sdk/client-sfn, the execution started (or re-attached), its journal followed and shown
 * as progress, its gates asked in the terminal and on the approval page at once (both answer
 * through the approvals API as the run's one identity: front-door.ts), and the exit code taken
 * from how the execution ended.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ListExecutionsCommand,
  StateMachineDoesNotExist,
} from '@aws-sdk/client-sfn';
import { executionDirName } from '../../files/execution-files.ts';
import { ExecutionFilesWriter } from '../../files/writer.ts';
import { ensureActivities, planStateMachineName, workerTargets } from '../../launch/deploy-plan.ts';
import { type LaunchPlanInput, launchPlan, type PlannerDetails } from '../../launch/launch-plan.ts';
import { renderChecklist } from '../../plan/render.ts';
import { type Plan, PlanSchema } from '../../plan/schema.ts';
import { decisionDetails, PolicyDeniedError } from '../../policy/decisions.ts';
import { planEntity, planFacts, stepEntity } from '../../policy/entities.ts';
import { PolicySet } from '../../policy/policy-set.ts';
import type { AnswerReviser, ApprovalsApiDeps } from '../../runtime/api/approvals-api.ts';
import { eventIdentity, journalFor } from '../../runtime/deps.ts';
import { type ApprovalNotice, approvalsFor } from '../../runtime/gate/gate.ts';
import type { GateView } from '../../runtime/gate/gate-item.ts';
import { shownOfNotice } from '../../runtime/gate/shown-gate.ts';
import { gateText, terminalSafe } from '../../runtime/gate/view-text.ts';
import { readEvents } from '../../runtime/journal/journal.ts';
import { slackDecisionUpdater, slackEscalationUpdater } from '../../runtime/notify/slack.ts';
import type { JournalRecord, RecoveryAdvice } from '../../runtime/payloads/index.ts';
import { AGENT_COMMAND_ENV } from '../../runtime/tools/agent.ts';
import { ActivityWorker } from '../../worker/worker.ts';
import { ApprovalsDesk, planFeedbackReviser } from './approvals-desk.ts';
import {
  ACCEPT_CHOICE,
  ESCALATION_CHOICES,
  GATE_CHOICES,
  HUMAN_CHOICES,
  parseApproval,
  parseEscalation,
  parseHumanReport,
} from './decisions.ts';
import { EventFollower } from './follow.ts';
import { RunFrontDoor } from './front-door.ts';
import { type GateAnswer, identityHint, type PendingGate, pendingGate } from './gate-desk.ts';
import { localSlackApp } from './local-slack.ts';
import { LocalRunStack } from './local-stack.ts';
import { checklistStateOf, outlineOf, ProgressFormatter } from './progress.ts';
import { localRecoveryAdvisor, type RecoveryPlanner, recoveryRevisionReviser } from './recovery-advisor.ts';
import { Spinner } from './spinner.ts';
import {
  liveSession,
  loadSigningKey,
  planFile,
  readRunSettings,
  releaseSession,
  type StorePaths,
  writeRunSettings,
  writeSession,
} from './store.ts';
import { type Asked, TerminalPrompter } from './terminal.ts';
import { WorkerWatch } from './worker-watch.ts';

/** Local state machines are named `plangate-<planId>`, as they always were (stores from earlier runs re-attach); activities `plangate-<target>`. */
export const LOCAL_NAME_PREFIX = 'plangate';

export interface SessionIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
}

export interface SessionOptions {
  readonly paths: StorePaths;
  /**
   * Who answers from this run, in the terminal, on the printed links' pages and with `--approve`
   * (the OS user unless `--as`): the plan's approval policy is checked against them.
   */
  readonly identity: string;
  /** Approve plan and step gates non-interactively (as `identity`) when the plan's policy allows it. */
  readonly approve: boolean;
  /** Events as JSON lines on stdout; everything else on stderr. */
  readonly json: boolean;
  readonly timeScale: number;
  /** Where seed 003's `<plan-id>-execution/` directory is written as events arrive. */
  readonly filesDir: string;
  /** Run the rollbacks after the plan succeeded, to prove they work (a new execution only). */
  readonly rehearseRollback: boolean;
  /**
   * A planned plan goes back to its planner when the person asks a question or rejects it at the
   * plan gate: the question becomes the rejection's reason (this version ends; approving it later
   * is refused), and the caller is told what to revise. @default - questions loop at the gate
   */
  readonly onPlanFeedback?: (feedback: string) => void;
  /**
   * The run's planner: at an escalation of a failure no recipe covers, the model suggests how to
   * recover, beside the person's choices (seed 001). @default - no suggestions
   */
  readonly recoveryPlanner?: RecoveryPlanner;
  /**
   * The person accepted a suggestion that changes the plan: this execution ends, and the caller is
   * told the new version (kept in the store by its digest) to send to the gate.
   */
  readonly onRecoveryRevision?: (advice: RecoveryAdvice) => void;
  readonly io: SessionIo;
  /** Who submits the plan (PLAN_CREATED): they may not approve it. @default - not recorded */
  readonly submittedBy?: string;
  /**
   * The platform's policy (`--policy DIR`): asked who may submit, answer, auto-approve and run
   * what, by every Lambda of this run as on AWS. @default the shipped default set
   */
  readonly policy?: PolicySet;
  /** Where Slack is configured (lib/local/run/local-slack.ts), and $PLANGATE_AGENT_COMMAND. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Run workers of each agent target in this process (running $PLANGATE_AGENT_COMMAND in the
   * current directory); false leaves the queue to `plangate worker` processes. Kept with the
   * execution (the store's run settings). @default - as the execution was started; a new one: true
   */
  readonly workers?: boolean;
  /** How many agents of one target the run's own workers run at once. @default IN_PROCESS_AGENTS_PER_TARGET */
  readonly agentsPerTarget?: number;
}

/**
 * The run's own workers take up to this many steps of one target at once (steps that do not
 * depend on each other, in the same workspace); `--agents-per-target` changes it.
 */
export const IN_PROCESS_AGENTS_PER_TARGET = 4;
export const MAX_AGENTS_PER_TARGET = 16;

export type SessionTarget =
  | {
      readonly kind: 'plan';
      readonly plan: Plan;
      readonly digest: string;
      /** How a model drafted it, for PLAN_CREATED. */
      readonly planner?: PlannerDetails;
    }
  | { readonly kind: 'execution'; readonly executionArn: string };

/** Runs (or resumes) to the end; returns the exit code: 0 succeeded, 1 otherwise, 130 interrupted. */
export async function runSession(target: SessionTarget, options: SessionOptions): Promise<number> {
  const { paths, io } = options;
  const note = (text: string) => io.stderr.write(`${text}\n`);
  const holder = await liveSession(paths);
  if (holder) {
    note(`plangate: the store ${paths.root} is in use by process ${holder.pid}; wait for it or use --store.`);
    return 1;
  }
  let plan: Plan;
  let digest: string;
  if (target.kind === 'plan') {
    ({ plan, digest } = target);
  } else {
    const found = await storedPlanOf(paths, target.executionArn);
    if (typeof found === 'string') {
      note(`plangate: ${found}`);
      return 1;
    }
    ({ plan, digest } = found);
  }

  const signingKey = await loadSigningKey(paths);
  const policy = options.policy ?? (await PolicySet.fromEnvironment(options.env ?? process.env));
  const facts = planFacts(plan);
  const slack = await localSlackApp(options.env ?? process.env);
  const notices = new NoticeBoard();
  let stackUp: (stack: LocalRunStack) => void = () => {};
  const stackReady = new Promise<LocalRunStack>((resolve) => {
    stackUp = resolve;
  });
  const checklistOf = pageChecklist(plan, `sha256:${digest}`);
  let notifySlack: ((notice: ApprovalNotice) => Promise<unknown>) | undefined;
  /** Tells people a gate waits (a new one, or a revision of one): this terminal, and Slack if configured. */
  const notify = async (notice: ApprovalNotice): Promise<void> => {
    notices.post(notice);
    if (!slack) return;
    // The notifier Lambda's work, with links to the front door.
    notifySlack ??= slack.notifier(front.url, (await stackReady).journalDeps('notifier'));
    // As on AWS, a notice that could not be posted does not hold the gate up.
    await notifySlack(notice).catch((error: unknown) =>
      note(`Slack: not posted: ${(error as Error).message}`),
    );
  };
  // The door listens first (the links' URL is known before any gate opens); it answers once the stack is up.
  const front = await RunFrontDoor.start({
    identity: options.identity,
    signingKey,
    deps: stackReady.then(
      (stack): Omit<ApprovalsApiDeps, 'identity' | 'signingKey'> => ({
        ...stack.journalDeps('approvalsApi'),
        sfn: stack.sfn,
        policy,
        // A modification on the page asks the gate's approvers again, this terminal included.
        notify,
        // The page's reader is at this machine, as the terminal's is.
        displayTimeZone: localTimeZone(),
        ...(slack ? { slack: slack.interactions } : {}),
        pageExtras: async (gate, answeringAs) => {
          const checklist = await checklistOf(stack, gate);
          const notice = answeringAs === undefined ? undefined : identityHint(gate, answeringAs);
          return { ...(checklist ? { checklist } : {}), ...(notice ? { notice } : {}) };
        },
        ...answerRevisers(options),
      }),
    ),
  });
  const stack = await LocalRunStack.start({
    paths,
    timeScale: options.timeScale,
    signingKey,
    policy,
    // The ladder's rejections and escalations show in the gate's Slack messages too.
    ...(slack
      ? {
          gateListeners: {
            onDecided: slackDecisionUpdater(slack.interactions.client),
            onEscalated: slackEscalationUpdater(slack.interactions.client),
          },
        }
      : {}),
    ...(options.recoveryPlanner
      ? { recoveryAdvisor: localRecoveryAdvisor(paths, options.recoveryPlanner) }
      : {}),
    notify,
  }).catch(async (error: unknown) => {
    await front.close();
    throw error;
  });
  stackUp(stack);
  const desk = new ApprovalsDesk({
    approvals: approvalsFor({ ...stack.journalDeps(), sfn: stack.sfn, signingKey }),
    front,
    planDigest: `sha256:${digest}`,
  });
  const prompter = new TerminalPrompter(io.stdin, io.stderr);
  const asked = new Map<string, Asked<GateAnswer>>();
  /** Gates `--approve` answered: asked again (refused), they go to the person. */
  const autoAnswered = new Set<string>();
  /** Answers being recorded: the run waits for them so their events are shown. */
  const recording = new Set<Promise<void>>();
  /** Asks a gate again after an answer was refused (e.g. missing outputs, not this identity's to give). */
  let askAgain: (gate: PendingGate) => void = () => {};
  /** For the way out a refusal names (plangate resume <arn> --as <name>). */
  let executionArnShown = '';
  const record = (gate: PendingGate, answer: GateAnswer) => {
    const done = answerGate(desk, gate, answer, note, options.identity, executionArnShown)
      .then((again) => {
        if (!again) return;
        asked.delete(gate.linkId);
        askAgain(gate);
      })
      .finally(() => recording.delete(done));
    recording.add(done);
  };
  await writeSession(paths, {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    dynamoEndpoint: stack.data.dynamo.endpoint,
    eventsEndpoint: stack.data.bus.endpoint,
    sfnEndpoint: stack.engineServer.url,
    approvalUrl: front.url,
  });

  const out = (line: string) => (options.json ? io.stderr : io.stdout).write(`${line}\n`);
  const spinner = new Spinner(io.stdout, !options.json && io.stdout.isTTY === true);
  let follower: EventFollower | undefined;
  let workers: ActivityWorker[] = [];
  let watch: WorkerWatch | undefined;
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let executionArn: string;
    try {
      executionArn =
        target.kind === 'execution'
          ? target.executionArn
          : await startOrReattach(stack, plan, digest, paths, note, {
              rehearseRollback: options.rehearseRollback,
              ...(target.planner ? { planner: target.planner } : {}),
              ...(options.submittedBy !== undefined ? { submittedBy: options.submittedBy } : {}),
              policy,
              // Who runs it submits it, as far as policy is concerned, whoever is recorded.
              principal: { name: options.submittedBy ?? options.identity },
            });
    } catch (error) {
      if (!(error instanceof PolicyDeniedError)) throw error;
      note(`✗ ${error.message}: not run.`);
      return 1;
    }
    executionArnShown = executionArn;
    note(`Execution: ${executionArn}`);
    const inProcess = await workerMode(paths, executionArn, options, plan, note);
    workers = await startWorkers(stack, plan, { ...options, workers: inProcess }, note);
    watch = new WorkerWatch({
      sfn: stack.sfn,
      executionArn,
      plan,
      timeScale: options.timeScale,
      inProcess,
      workerCommand: (target) => workerCommand(target, paths),
      say: note,
    });
    watch.start();
    note(
      `Answering as ${options.identity} (--as <name> to answer as someone else), here or on the approval page: links are printed with each gate.`,
    );
    if (slack) note(`Slack interactions: ${front.url}/slack/interactions`);
    // Plan text is the author's: a control sequence in it must not reach the terminal as one.
    if (!options.json) out(`\n${terminalSafe(renderChecklist(plan))}\n`);

    /** A gate answered in another shell (plangate complete), by Slack or by a timeout: stop asking. */
    const withdrawAnsweredElsewhere = async () => {
      for (const [linkId, question] of asked) {
        const settled = await desk.settled(linkId);
        if (settled === undefined) continue;
        question.withdraw(`Answered elsewhere: ${settled}`);
        asked.delete(linkId);
      }
    };
    const progress = new ProgressFormatter(outlineOf(plan));
    const filesDir = join(options.filesDir, executionDirName(plan.id));
    const files = new ExecutionFilesWriter(filesDir, plan);
    const failures = new Map<string, string>();
    follower = new EventFollower({
      dynamo: stack.data.clients.doc,
      eventsTable: stack.data.tableNames.events,
      bus: stack.data.bus,
      executionId: executionArn,
      onEvent: async (event) => {
        await files.add(event);
        watch?.onEvent(event);
        if (DECISION_EVENTS.has(event.event)) await withdrawAnsweredElsewhere();
        if (event.event === 'FAILURE_CLASSIFIED' && event.task_id)
          failures.set(
            event.task_id,
            `${String(event.details.failure_type)} (${String(event.details.error)})`,
          );
        if (options.json) {
          io.stdout.write(`${JSON.stringify(event)}\n`);
          // Scripts read events on stdout; the final summary line still goes to a person.
          if (event.event === 'EXECUTION_COMPLETE') note(progress.lines(event).join('\n'));
        } else spinner.print(progress.lines(event).map(terminalSafe));
        spinner.update(progress.running());
      },
    });
    await follower.start();

    const ask = (gate: PendingGate) => {
      if (asked.has(gate.linkId)) return;
      const hint = identityHint(
        gate.submittedBy === undefined && options.submittedBy !== undefined
          ? { ...gate, submittedBy: options.submittedBy }
          : gate,
        options.identity,
      );
      const question = terminalSafe(
        gateQuestion(gate, plan, failures, front.linkFor(gate.linkId, gate.planDigest), hint),
      );
      const approving = gate.kind === 'plan' || gate.kind === 'step';
      if (approving && options.approve && !autoAnswered.has(gate.linkId)) {
        const permittedBy = plan.approval.allowAutoApprove ? autoApproval(gate) : undefined;
        if (permittedBy) {
          autoAnswered.add(gate.linkId);
          // What is approved on the person's behalf is shown all the same.
          if (gate.shown) note(terminalSafe(gateText(gate.shown, { timeZone: localTimeZone() })));
          note(
            `--approve: answering the ${gate.kind} gate APPROVE non-interactively as ${options.identity} (the plan's approval policy allows it).`,
          );
          asked.set(gate.linkId, { answer: Promise.resolve(undefined), withdraw: () => {} });
          record(gate, {
            decision: 'APPROVE',
            by: options.identity,
            comment: `auto-approved by ${options.identity} (--approve; policy ${permittedBy.join(', ') || 'none'})`,
          });
          return;
        }
        if (plan.approval.allowAutoApprove)
          note(
            "--approve: the platform's policy does not permit approving this gate non-interactively; asking.",
          );
        else
          note("--approve: the plan's approval policy (allowAutoApprove: false) requires a person; asking.");
      }
      const by = options.identity;
      const pending = prompter.ask<GateAnswer>({
        text: question,
        parse: (line) =>
          gate.kind === 'escalation'
            ? parseEscalation(line, by, gate.shown?.recovery !== undefined)
            : gate.kind === 'human'
              ? parseHumanReport(line, by)
              : parseApproval(line, { kind: gate.kind, stepIds: plan.steps.map((s) => s.id), by }),
      });
      asked.set(gate.linkId, pending);
      void pending.answer.then((answer) => {
        if (answer) record(gate, answer);
      });
    };
    /**
     * The policies that let `--approve` answer this gate (AutoApprove: the plan, or the step at
     * its own gate, as the harness judged them), named in the vote's comment; undefined, after
     * journaling POLICY_DECISION, when policy forbids it and a person is asked.
     */
    const autoApproval = (gate: PendingGate): readonly string[] | undefined => {
      const identity = { id: plan.id, version: plan.version, digest: gate.planDigest };
      const submitter = gate.submittedBy ?? options.submittedBy;
      const planResource = planEntity(identity, facts, submitter);
      const request = {
        principal: { name: options.identity },
        action: 'AutoApprove' as const,
        ...(gate.kind === 'step' && gate.stepId !== undefined
          ? {
              resource: stepEntity(identity, gate.stepId, facts.steps[gate.stepId], {
                ...(submitter !== undefined ? { submitter } : {}),
              }),
              entities: [planResource],
            }
          : { resource: planResource }),
        context: { gate: gate.kind },
      };
      const decided = policy.authorize(request);
      if (decided.decision === 'allow') return decided.determiningPolicies;
      const journaled = journalFor(stack.journalDeps())
        .append({
          ...eventIdentity(
            { executionId: gate.executionId, plan: identity },
            gate.stepId !== undefined ? { id: gate.stepId } : undefined,
          ),
          event: 'POLICY_DECISION',
          details: decisionDetails(request, decided, 'a person is asked'),
        })
        .then(
          (): void => {},
          (error: unknown): void => {
            note(`policy decision not journaled: ${(error as Error).message}`);
          },
        )
        .finally(() => recording.delete(journaled));
      recording.add(journaled);
      return undefined;
    };
    askAgain = ask;
    notices.onNotice((notice) => {
      // A modification (here, on the page, in Slack or through the API) made a revision: what is
      // asked changed, so the question is asked again about it, and answers bind to its digest.
      if (notice.revision) {
        desk.revised(notice.approvalId, notice.revision.digest);
        asked
          .get(notice.approvalId)
          ?.withdraw(
            `Modified by ${notice.revision.by} (revision ${notice.revision.number}): asking again about what it now runs.`,
          );
        asked.delete(notice.approvalId);
      }
      ask(noticeGate(notice));
    });
    for (const gate of await desk.pending(executionArn)) ask(gate);

    const final = await waitForEnd(stack, executionArn, () => interrupted);
    if (!final) {
      spinner.stop();
      note(`\nInterrupted. The execution keeps its state; resume with:\n  plangate resume ${executionArn}`);
      return 130;
    }
    await Promise.all(recording);
    await follower.catchUp();
    await follower.settled();
    spinner.stop();
    if (final.status !== 'SUCCEEDED')
      note(`Execution ${final.status}: ${final.error ?? ''} ${short(final.cause)}`.trim());
    for (const line of whereToLook(plan, executionArn, filesDir)) out(line);
    return final.status === 'SUCCEEDED' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    spinner.stop();
    follower?.stop();
    watch?.stop();
    // A task in progress is failed (the recipe retries it on the next run or resume).
    await Promise.all(workers.map((worker) => worker.stop('fail')));
    prompter.close();
    await front.close();
    await stack.close();
    await releaseSession(paths);
  }
}

/** The host's rewrites of answers: a planned plan's feedback, a suggestion that makes a new version. */
function answerRevisers(options: SessionOptions): { reviseAnswer?: AnswerReviser } {
  const revisers = [
    ...(options.onPlanFeedback ? [planFeedbackReviser(options.onPlanFeedback)] : []),
    ...(options.onRecoveryRevision ? [recoveryRevisionReviser(options.onRecoveryRevision)] : []),
  ];
  if (revisers.length === 0) return {};
  return { reviseAnswer: (gate, decision) => revisers.map((r) => r(gate, decision)).find(Boolean) };
}

/**
 * Whether this run's own workers take its agent steps: as asked (`--no-workers`), else as the
 * execution was started (kept in the store), else yes; what is decided is kept for the next resume.
 */
async function workerMode(
  paths: StorePaths,
  executionArn: string,
  options: SessionOptions,
  plan: Plan,
  note: (text: string) => void,
): Promise<boolean> {
  const recorded = await readRunSettings(paths, executionArn);
  const inProcess = options.workers ?? (recorded ? recorded.workers === 'in-process' : true);
  const workers = inProcess ? 'in-process' : 'external';
  if (recorded?.workers !== workers) await writeRunSettings(paths, { executionArn, workers });
  else if (options.workers === undefined && !inProcess && workerTargets(plan).length > 0)
    note(
      'This execution was started with --no-workers: its agent steps stay with plangate worker processes.',
    );
  return inProcess;
}

/** The command that starts a worker of `target` for this store. */
function workerCommand(target: string, paths: StorePaths): string {
  return `plangate worker --target ${target} --store ${paths.root} --agent-command "<agent>"`;
}

/**
 * Workers for the plan's agent targets, in this process (`agentsPerTarget` of each, so steps
 * that do not depend on each other run side by side), or (with `workers: false`) a note of what
 * to run instead. Their activities are ensured first: a resumed run may predate them.
 */
async function startWorkers(
  stack: LocalRunStack,
  plan: Plan,
  options: SessionOptions,
  note: (text: string) => void,
): Promise<ActivityWorker[]> {
  const targets = workerTargets(plan);
  if (targets.length === 0) return [];
  if (options.workers === false) {
    note('Agent steps wait for workers (--no-workers); run, in the workspace:');
    for (const target of targets) note(`  ${workerCommand(target, options.paths)}`);
    return [];
  }
  const activities = await ensureActivities(stack.sfn, plan, LOCAL_NAME_PREFIX);
  const agentCommand = (options.env ?? process.env)[AGENT_COMMAND_ENV];
  const perTarget = options.agentsPerTarget ?? IN_PROCESS_AGENTS_PER_TARGET;
  return targets.flatMap((target) =>
    Array.from({ length: perTarget }, (_, slot) => {
      const worker = new ActivityWorker({
        sfn: stack.sfn,
        activityArn: activities[target] as string,
        target,
        workspace: process.cwd(),
        agentCommand,
        timeScale: options.timeScale,
        // Who ran an attempt: this host and process (the journal records it), and which of its workers.
        workerName: `${hostname()}:${process.pid}/${target}-${slot + 1}`.slice(0, 80),
        log: note,
      });
      void worker.run().catch((error: unknown) => note(`worker ${target}: ${(error as Error).message}`));
      return worker;
    }),
  );
}

/** The unfinished execution of this plan digest, else a new one (launchPlan: PLAN_CREATED first). */
async function startOrReattach(
  stack: LocalRunStack,
  plan: Plan,
  digest: string,
  paths: StorePaths,
  note: (text: string) => void,
  launch: Pick<LaunchPlanInput, 'planner' | 'submittedBy' | 'policy' | 'principal'> & {
    rehearseRollback: boolean;
  },
): Promise<string> {
  const file = planFile(paths, digest);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(plan)}\n`);

  const stateMachineArn = LocalRunStack.stateMachineArn(planStateMachineName(LOCAL_NAME_PREFIX, plan.id));
  const running = await stack.sfn
    .send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING' }))
    .catch((error: unknown) => {
      if (error instanceof StateMachineDoesNotExist) return { executions: [] };
      throw error;
    });
  for (const execution of running.executions ?? []) {
    const arn = execution.executionArn as string;
    const [first] = await readEvents(stack.data.clients.doc, stack.data.tableNames.events, arn);
    if (first?.planDigest === `sha256:${digest}`) {
      note(
        `Re-attaching to the unfinished execution of this plan (same digest): completed steps are not run again.`,
      );
      return arn;
    }
  }

  const launched = await launchPlan({
    sfn: stack.sfn,
    plan,
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    namePrefix: LOCAL_NAME_PREFIX,
    tracing: false,
    journal: stack.journalDeps(),
    executionName: `${plan.id.slice(0, 50)}-${Date.now().toString(36)}`,
    ...(launch.planner ? { planner: launch.planner } : {}),
    ...(launch.submittedBy !== undefined ? { submittedBy: launch.submittedBy } : {}),
    ...(launch.policy ? { policy: launch.policy } : {}),
    ...(launch.principal ? { principal: launch.principal } : {}),
    channel: 'cli',
    rehearseRollback: launch.rehearseRollback,
  });
  return launched.executionArn;
}

/** The closing lines: where the plan's work is (its `context.workDir`, by convention) and how to see the events. */
function whereToLook(plan: Plan, executionArn: string, filesDir: string): string[] {
  const workDir = plan.context.workDir;
  return [
    '',
    ...(typeof workDir === 'string' ? [`Outputs: ${resolve(workDir)} (the plan's context.workDir)`] : []),
    `Execution files: ${resolve(filesDir)} (seed 003; regenerate with plangate files ${executionArn})`,
    `Events: plangate events ${executionArn}   (add --json for the full records; the hash chain is verified)`,
  ];
}

/** The plan an execution was started with, from the store. */
async function storedPlanOf(
  paths: StorePaths,
  executionArn: string,
): Promise<{ plan: Plan; digest: string } | string> {
  const { startLocalDynamo } = await import('../dynamo.ts');
  const { localClients } = await import('../clients.ts');
  const { documentClient } = await import('../../runtime/journal/document-client.ts');
  const { DEFAULT_TABLE_NAMES } = await import('../../runtime/journal/tables.ts');
  const dynamo = await startLocalDynamo({ dataDir: paths.data });
  const clients = localClients({ dynamoEndpoint: dynamo.endpoint, eventsEndpoint: dynamo.endpoint });
  let first: JournalRecord | undefined;
  try {
    [first] = await readEvents(
      documentClient(clients.dynamo),
      DEFAULT_TABLE_NAMES.events,
      executionArn,
    ).catch(() => []);
  } finally {
    clients.destroy();
    await dynamo.close();
  }
  if (!first) return `no execution ${executionArn} in ${paths.root} (see plangate status)`;
  try {
    const plan = PlanSchema.parse(JSON.parse(await readFile(planFile(paths, first.planDigest), 'utf8')));
    return { plan, digest: first.planDigest.replace(/^sha256:/, '') };
  } catch {
    return `the plan of ${executionArn} (${first.planDigest}) is not in ${paths.root}/plans`;
  }
}

async function waitForEnd(
  stack: LocalRunStack,
  executionArn: string,
  interrupted: () => boolean,
): Promise<DescribeExecutionCommandOutput | undefined> {
  for (;;) {
    if (interrupted()) return undefined;
    const described = await stack.sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (described.status !== 'RUNNING' && described.status !== 'PENDING_REDRIVE') return described;
    await new Promise((r) => setTimeout(r, 150));
  }
}

/**
 * Records an answer through the front door and says what became of it (a refusal with its
 * reason, and who may answer instead). Returns whether the gate is to be asked again: the answer
 * was not valid, or not this identity's to give (another answer may still be).
 */
async function answerGate(
  desk: ApprovalsDesk,
  gate: PendingGate,
  answer: GateAnswer,
  note: (text: string) => void,
  identity: string,
  executionArn: string,
): Promise<boolean> {
  const outcome = await desk.answer(gate.linkId, answer).catch((error: unknown) => ({
    ok: false as const,
    reason: 'invalid' as const,
    message: error instanceof Error ? error.message : String(error),
  }));
  if (outcome.ok) {
    if (outcome.note) note(outcome.note);
    // A modification made a revision: its notice asks about it again.
    return false;
  }
  note(`Not recorded: ${outcome.message}`);
  if (outcome.reason === 'forbidden') {
    const hint = identityHint(gate, identity);
    if (hint) note(hint);
    note(`The execution keeps waiting: Ctrl-C, then plangate resume ${executionArn} --as <name>.`);
  }
  return outcome.reason === 'invalid' || outcome.reason === 'forbidden';
}

/**
 * The checklist a gate's page shows: the plan's steps as its execution stands when the page is
 * loaded (read from the journal), for gates of this session's plan.
 */
function pageChecklist(plan: Plan, planDigest: string) {
  return async (stack: LocalRunStack, gate: GateView): Promise<string | undefined> => {
    if (gate.planDigest !== planDigest) return undefined;
    const events = await readEvents(stack.data.clients.doc, stack.data.tableNames.events, gate.executionId);
    return renderChecklist(plan, checklistStateOf(plan, events));
  };
}

function gateQuestion(
  gate: PendingGate,
  plan: Plan,
  failures: Map<string, string>,
  link: string,
  hint: string | undefined,
): string {
  const step = gate.stepId ? plan.steps.find((s) => s.id === gate.stepId) : undefined;
  const lines = [''];
  if (gate.kind === 'plan') lines.push(`Approve plan "${plan.id}" v${plan.version}? (round ${gate.round})`);
  else if (gate.kind === 'step')
    lines.push(`Step "${step?.description ?? gate.stepId}" needs approval before it runs.`);
  else if (gate.kind === 'human') {
    lines.push(
      `Step "${step?.description ?? gate.stepId}" is yours to do: ${gate.human?.instructions ?? ''}`,
    );
    const outputs = gate.human?.outputs ?? step?.outputs ?? [];
    if (outputs.length > 0) lines.push(`When it is done, report: ${outputs.map((o) => `${o}=…`).join(' ')}`);
  } else {
    const failure = gate.failure
      ? `${gate.failure.failureClass} (${gate.failure.error}): ${gate.failure.message}`
      : (failures.get(gate.stepId ?? '') ?? 'failed');
    lines.push(`Step "${step?.description ?? gate.stepId}" failed: ${short(failure)}`);
    if (gate.failure?.failureClass === 'permission')
      lines.push('Configure the credentials out of band (environment, vault, config file) before you retry.');
  }
  if (gate.question) lines.push(`Question asked: ${gate.question}`);
  // What the approval covers, exactly: every command, contract, rollback and risk (in this machine's time zone).
  if (gate.shown) lines.push(gateText(gate.shown, { timeZone: localTimeZone() }), '');
  if (hint) lines.push(hint);
  lines.push(`Answer here or open ${link}`);
  lines.push(
    ...(gate.kind === 'escalation'
      ? [...ESCALATION_CHOICES, ...(gate.shown?.recovery ? [ACCEPT_CHOICE] : [])]
      : gate.kind === 'human'
        ? HUMAN_CHOICES
        : GATE_CHOICES),
  );
  return lines.join('\n');
}

function noticeGate(notice: ApprovalNotice): PendingGate {
  return pendingGate(
    notice.approvalId,
    { ...notice, planDigest: notice.plan.digest },
    Math.floor(Date.parse(notice.expiresAt) / 1000),
    shownOfNotice(notice),
  );
}

const localTimeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone;

const short = (text: string | undefined): string => {
  const line = (text ?? '').replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
};

/** Events that record a gate's answer, wherever it was given. */
const DECISION_EVENTS: ReadonlySet<string> = new Set([
  'GATE_APPROVED',
  'GATE_REJECTED',
  'GATE_CLARIFICATION_REQUESTED',
  'HUMAN_TASK_ANSWERED',
  'RECOVERY_ESCALATION',
]);

/** Notices from the gate Lambda, handed to whoever listens (the session, once it is attached). */
class NoticeBoard {
  private listener: ((notice: ApprovalNotice) => void) | undefined;
  private readonly early: ApprovalNotice[] = [];

  post(notice: ApprovalNotice): void {
    if (this.listener) this.listener(notice);
    else this.early.push(notice);
  }

  onNotice(listener: (notice: ApprovalNotice) => void): void {
    this.listener = listener;
    for (const notice of this.early.splice(0)) listener(notice);
  }
}
