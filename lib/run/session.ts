/**
 * One `plangate run` / `plangate resume`: the local stack up, the plan deployed through
 * @aws-sdk/client-sfn, the execution started (or re-attached), its journal followed and shown
 * as progress, its gates asked in the terminal and on the approval page at once (both answer
 * through the approvals API as the run's one identity: front-door.ts), and the exit code taken
 * from how the execution ended.
 */

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ListExecutionsCommand,
  StateMachineDoesNotExist,
} from '@aws-sdk/client-sfn';
import { executionDirName } from '../files/execution-files.ts';
import { ExecutionFilesWriter } from '../files/writer.ts';
import { ensureActivities, planStateMachineName, workerTargets } from '../launch/deploy-plan.ts';
import { launchPlan, type PlannerDetails } from '../launch/launch-plan.ts';
import { renderChecklist } from '../plan/render.ts';
import { planAsRevised } from '../plan/revision.ts';
import { type PlanRisks, planRisks, unattendedApprovalRefusals } from '../plan/risks.ts';
import { type Plan, PlanSchema } from '../plan/schema.ts';
import { visibleText } from '../plan/visible-text.ts';
import { decisionDetails, PolicyDeniedError } from '../policy/decisions.ts';
import { planEntity, planFacts, stepEntity } from '../policy/entities.ts';
import { PolicySet } from '../policy/policy-set.ts';
import type { AnswerReviser, ApprovalsApiDeps } from '../runtime/api/approvals-api.ts';
import { eventIdentity, journalFor } from '../runtime/deps.ts';
import { DECISION_EVENTS } from '../runtime/gate/decision-events.ts';
import { type ApprovalNotice, approvalsFor } from '../runtime/gate/gate.ts';
import type { GateView } from '../runtime/gate/gate-item.ts';
import { shownOfNotice } from '../runtime/gate/shown-gate.ts';
import { gateText } from '../runtime/gate/view-text.ts';
import { readEvents } from '../runtime/journal/journal.ts';
import { slackDecisionUpdater, slackEscalationUpdater } from '../runtime/notify/slack.ts';
import type { JournalRecord, PlanFacts, RecoveryAdvice } from '../runtime/payloads/index.ts';
import {
  findingMessage,
  integrityFindings,
  planCreatedOf,
  recordFindings,
  sfnDefinitionReader,
} from '../runtime/steps/integrity.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';
import { type LocalSlackApp, localSlackApp } from '../serve/local-slack.ts';
import { claimStore, LocalRunStack, StoreHeldError } from '../serve/local-stack.ts';
import {
  liveSession,
  loadSigningKey,
  planFile,
  readRunSettings,
  releaseSession,
  type StorePaths,
  writeRunSettings,
  writeSession,
  writeStorePolicy,
} from '../serve/store-directory.ts';
import { ActivityWorker } from '../worker/worker.ts';
import { RunAgents } from './agent-runners.ts';
import { ApprovalsDesk, planFeedbackReviser } from './approvals-desk.ts';
import {
  ACCEPT_CHOICE,
  ESCALATION_CHOICES,
  GATE_CHOICES,
  HUMAN_CHOICES,
  POLICY_DENIED_CHOICES,
  parseApproval,
  parseEscalation,
  parseHumanReport,
} from './decisions.ts';
import { EventFollower } from './follow.ts';
import { RunFrontDoor } from './front-door.ts';
import { type GateAnswer, identityHint, type PendingGate, pendingGate } from './gate-desk.ts';
import { checklistStateOf, outlineOf, ProgressFormatter } from './progress.ts';
import { localRecoveryAdvisor, type RecoveryPlanner, recoveryRevisionReviser } from './recovery-advisor.ts';
import { Spinner } from './spinner.ts';
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
  /**
   * A new execution's launcher (`identity`) is recorded as its submitter, who may not approve it;
   * solo: recorded as a solo launch with no submitter, so the launcher may approve. Unused when
   * re-attaching or resuming: PLAN_CREATED already says.
   */
  readonly solo: boolean;
  /** Overrides the soft-mandatory policies refusing the submission, with this reason. @default - none */
  readonly policyOverride?: string;
  /**
   * The platform's policy (`--policy DIR`): asked who may submit, answer, auto-approve and run
   * what, by every Lambda of this run as on AWS. @default the shipped default set
   */
  readonly policy?: PolicySet;
  /** Where Slack is configured (lib/serve/local-slack.ts), and $PLANGATE_AGENT_COMMAND. @default process.env */
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
  const session = await RunSession.open(target, options);
  if (typeof session === 'string') {
    options.io.stderr.write(`plangate: ${session}\n`);
    return 1;
  }
  return session.run();
}

/** What a session starts before it runs anything: the plan, its policy, the front door and the stack. */
interface SessionParts {
  readonly plan: Plan;
  /** The plan's digest (hex). */
  readonly digest: string;
  readonly signingKey: Buffer;
  readonly policy: PolicySet;
  readonly slack: LocalSlackApp | undefined;
  readonly notices: GateNotices;
  readonly front: RunFrontDoor;
  readonly stack: LocalRunStack;
  readonly agents: RunAgents;
}

/**
 * One run (or resume) of one execution, from the front door and the stack being up to the exit
 * code: `open` starts them, `run` starts (or re-attaches to) the execution, follows it and asks
 * its gates until it ends, then closes everything.
 */
export class RunSession {
  private readonly plan: Plan;
  private readonly digest: string;
  private readonly policy: PolicySet;
  private readonly facts: PlanFacts;
  /** The risks of the plan as run, for what `--approve` may answer. */
  private readonly risks: PlanRisks;
  private readonly slack: LocalSlackApp | undefined;
  private readonly notices: GateNotices;
  private readonly front: RunFrontDoor;
  private readonly stack: LocalRunStack;
  private readonly agents: RunAgents;
  /** Steps whose effect is unknown (agents): `--approve` never answers their gates. */
  private readonly desk: ApprovalsDesk;
  private readonly prompter: TerminalPrompter;
  private readonly spinner: Spinner;
  private readonly progress: ProgressFormatter;
  /** Where seed 003's execution files are written as events arrive. */
  private readonly filesDir: string;
  private readonly files: ExecutionFilesWriter;
  /** The questions open in the terminal, by link id. */
  private readonly asked = new Map<string, Asked<GateAnswer>>();
  /** Gates `--approve` answered: asked again (refused), they go to the person. */
  private readonly autoAnswered = new Set<string>();
  /** Answers being recorded: the run waits for them so their events are shown. */
  private readonly recording = new Set<Promise<void>>();
  /** Each failed step's classified failure, for an escalation that does not carry its own. */
  private readonly failures = new Map<string, string>();

  /** Who a new execution records as its submitter: the launcher, unless the run is solo. */
  private get launchSubmitter(): string | undefined {
    return this.options.solo ? undefined : this.options.identity;
  }
  /** The execution run, once started or re-attached: the way out a refusal names (plangate resume <arn> --as <name>). */
  private executionArn = '';
  private interrupted = false;
  private follower: EventFollower | undefined;
  private workers: ActivityWorker[] = [];
  private watch: WorkerWatch | undefined;

  private constructor(
    private readonly target: SessionTarget,
    private readonly options: SessionOptions,
    parts: SessionParts,
  ) {
    this.plan = parts.plan;
    this.digest = parts.digest;
    this.policy = parts.policy;
    this.facts = planFacts(parts.plan);
    this.risks = planRisks(parts.plan);
    this.slack = parts.slack;
    this.notices = parts.notices;
    this.front = parts.front;
    this.stack = parts.stack;
    this.agents = parts.agents;
    this.desk = new ApprovalsDesk({
      approvals: approvalsFor({
        ...parts.stack.journalDeps(),
        sfn: parts.stack.sfn,
        signingKey: parts.signingKey,
      }),
      front: parts.front,
      planDigest: `sha256:${parts.digest}`,
    });
    this.prompter = new TerminalPrompter(options.io.stdin, options.io.stderr);
    this.spinner = new Spinner(options.io.stdout, !options.json && options.io.stdout.isTTY === true);
    this.progress = new ProgressFormatter(outlineOf(parts.plan));
    this.filesDir = join(options.filesDir, executionDirName(parts.plan.id));
    this.files = new ExecutionFilesWriter(this.filesDir, parts.plan);
  }

  /**
   * The session with its front door and stack up, or why it cannot run: the store is held by
   * another process, or the execution to resume (or its plan) is not in it.
   */
  static async open(target: SessionTarget, options: SessionOptions): Promise<RunSession | string> {
    const { paths } = options;
    const holder = await liveSession(paths);
    if (holder)
      return `the store ${paths.root} is in use by process ${holder.pid}; wait for it or use --store.`;
    // Before anything is started or read: a process that holds the store but has not announced
    // its session yet (it is starting) is found here, named, and nothing of this one is left open.
    try {
      await claimStore(paths, target.kind === 'plan' ? 'plangate run' : 'plangate resume');
    } catch (error) {
      if (error instanceof StoreHeldError) return error.message;
      throw error;
    }
    const planned = target.kind === 'plan' ? target : await storedPlanOf(paths, target.executionArn);
    if (typeof planned === 'string') return planned;
    const { plan, digest } = planned;

    const signingKey = await loadSigningKey(paths);
    const policy = options.policy ?? (await PolicySet.fromEnvironment(options.env ?? process.env));
    // A new execution's workers are this run's unless --no-workers; a resumed one's, as it was started.
    const agents = new RunAgents(
      (options.env ?? process.env)[AGENT_COMMAND_ENV],
      process.cwd(),
      options.workers !== false,
    );
    const slack = await localSlackApp(options.env ?? process.env);
    const notices = new GateNotices(slack, (text) => options.io.stderr.write(`${text}\n`));
    const checklistOf = pageChecklist(plan, `sha256:${digest}`);
    // The door listens first (the links' URL is known before any gate opens); it answers once the stack is up.
    const front = await RunFrontDoor.start({
      identity: options.identity,
      signingKey,
      deps: notices.stack.then(
        (stack): Omit<ApprovalsApiDeps, 'identity' | 'signingKey'> => ({
          ...stack.journalDeps('approvalsApi'),
          sfn: stack.sfn,
          policy,
          // A modification on the page asks the gate's approvers again, this terminal included.
          notify: notices.notify,
          // The page's reader is at this machine, as the terminal's is.
          displayTimeZone: localTimeZone(),
          slack: slack?.interactions,
          pageExtras: async (gate, answeringAs) => {
            const checklist = await checklistOf(stack, gate);
            const notice = answeringAs === undefined ? undefined : identityHint(gate, answeringAs);
            return { checklist, notice };
          },
          ...answerRevisers(options),
        }),
      ),
    });
    const stack = await LocalRunStack.start({
      paths,
      holder: target.kind === 'plan' ? 'plangate run' : 'plangate resume',
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
      agentRunners: agents.runners,
      notify: notices.notify,
    }).catch(async (error: unknown) => {
      await front.close();
      throw error;
    });
    notices.up(stack, front.url);
    return new RunSession(target, options, {
      plan,
      digest,
      signingKey,
      policy,
      slack,
      notices,
      front,
      stack,
      agents,
    });
  }

  /** Runs the execution to its end (or until interrupted), then closes everything this session started. */
  async run(): Promise<number> {
    await writeStorePolicy(this.options.paths, this.policy.dir);
    await writeSession(this.options.paths, {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dynamoEndpoint: this.stack.data.dynamo.endpoint,
      eventsEndpoint: this.stack.data.bus.endpoint,
      sfnEndpoint: this.stack.engineServer.url,
      approvalUrl: this.front.url,
    });
    process.once('SIGINT', this.onSignal);
    process.once('SIGTERM', this.onSignal);
    try {
      return await this.runToEnd();
    } finally {
      await this.close();
    }
  }

  private readonly onSignal = (): void => {
    this.interrupted = true;
  };

  private readonly note = (text: string): void => {
    this.options.io.stderr.write(`${text}\n`);
  };

  /** A line for the person: on stdout, unless stdout carries the events (--json). */
  private out(line: string): void {
    (this.options.json ? this.options.io.stderr : this.options.io.stdout).write(`${line}\n`);
  }

  private async runToEnd(): Promise<number> {
    const executionArn = await this.startExecution();
    if (executionArn === undefined) return 1;
    this.executionArn = executionArn;
    this.note(`Execution: ${executionArn}`);
    if (this.target.kind === 'execution' && (await this.refusedAsUnpinned(executionArn))) return 1;
    await this.startWorking();
    this.introduce();
    const follower = await this.followEvents();
    this.notices.onNotice((notice) => this.askAbout(notice));
    for (const gate of await this.desk.pending(executionArn)) this.ask(gate);

    const final = await this.waitForEnd();
    if (!final) {
      this.spinner.stop();
      this.note(
        `\nInterrupted. The execution keeps its state; resume with:\n  plangate resume ${executionArn}`,
      );
      return 130;
    }
    await Promise.all(this.recording);
    await follower.catchUp();
    await follower.settled();
    this.spinner.stop();
    if (final.status !== 'SUCCEEDED')
      this.note(`Execution ${final.status}: ${final.error ?? ''} ${short(final.cause)}`.trim());
    for (const line of whereToLook(this.plan, executionArn, this.filesDir)) this.out(line);
    return final.status === 'SUCCEEDED' ? 0 : 1;
  }

  /** The execution to follow: the one resumed, else this plan's (started or re-attached); undefined when policy refuses it. */
  private async startExecution(): Promise<string | undefined> {
    if (this.target.kind === 'execution') return this.target.executionArn;
    try {
      return await this.startOrReattach(this.target.planner);
    } catch (error) {
      if (!(error instanceof PolicyDeniedError)) throw error;
      this.note(`✗ ${error.message}: not run.`);
      return undefined;
    }
  }

  /**
   * `plangate resume` carries on only with the definition that was approved and the policy set
   * the plan was submitted under (PLAN_CREATED's pin): else INTEGRITY_MISMATCH is journaled, the
   * refusal is printed with both hashes and the way on, and nothing is asked or run.
   */
  private async refusedAsUnpinned(executionArn: string): Promise<boolean> {
    const deps = this.stack.journalDeps();
    const pin = (await planCreatedOf(deps.dynamo, deps.tables.events, executionArn))?.integrity;
    if (!pin) return false;
    const findings = await integrityFindings(pin, {
      executionArn,
      definitions: sfnDefinitionReader(this.stack.sfn),
      policyDigest: this.policy.digest,
    });
    if (findings.length === 0) return false;
    const identity = eventIdentity({
      executionId: executionArn,
      plan: { id: this.plan.id, version: this.plan.version, digest: `sha256:${this.digest}` },
    });
    await recordFindings(deps, identity, 'resume', findings);
    for (const finding of findings) this.note(`✗ not resumed: ${findingMessage(executionArn, finding)}.`);
    if (findings.some((f) => f.check === 'policy')) this.note(`  (policies in force: ${this.policy.dir})`);
    return true;
  }

  /** The unfinished execution of this plan digest, else a new one (launchPlan: PLAN_CREATED first). */
  private async startOrReattach(planner: PlannerDetails | undefined): Promise<string> {
    const { plan, digest, stack, options } = this;
    const file = planFile(options.paths, digest);
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
        this.note(
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
      planner,
      submittedBy: this.launchSubmitter,
      launch: { by: options.identity, osUser: userInfo().username, solo: options.solo },
      policy: this.policy,
      // Who runs it submits it, as far as policy is concerned, solo or not.
      principal: { name: options.identity },
      channel: 'cli',
      rehearseRollback: options.rehearseRollback,
      ...(options.policyOverride !== undefined ? { policyOverride: options.policyOverride } : {}),
    });
    return launched.executionArn;
  }

  /** The run's own workers (or the note of what to run instead), and the watch over the agent steps' queue. */
  private async startWorking(): Promise<void> {
    const inProcess = await this.workerMode();
    this.workers = await this.startWorkers(inProcess);
    this.watch = new WorkerWatch({
      sfn: this.stack.sfn,
      executionArn: this.executionArn,
      plan: this.plan,
      timeScale: this.options.timeScale,
      inProcess,
      workerCommand: (target) => workerCommand(target, this.options.paths),
      say: this.note,
    });
    this.watch.start();
  }

  /**
   * Whether this run's own workers take its agent steps: as asked (`--no-workers`), else as the
   * execution was started (kept in the store), else yes; what is decided is kept for the next resume.
   */
  private async workerMode(): Promise<boolean> {
    const { options, executionArn } = this;
    const recorded = await readRunSettings(options.paths, executionArn);
    const inProcess = options.workers ?? (recorded ? recorded.workers === 'in-process' : true);
    this.agents.inProcess = inProcess;
    const workers = inProcess ? 'in-process' : 'external';
    if (recorded?.workers !== workers) await writeRunSettings(options.paths, { executionArn, workers });
    else if (options.workers === undefined && !inProcess && workerTargets(this.plan).length > 0)
      this.note(
        'This execution was started with --no-workers: its agent steps stay with plangate worker processes.',
      );
    return inProcess;
  }

  /**
   * Workers for the plan's agent targets, in this process (`agentsPerTarget` of each, so steps
   * that do not depend on each other run side by side), or (not `inProcess`) a note of what to
   * run instead. Their activities are ensured first: a resumed run may predate them.
   */
  private async startWorkers(inProcess: boolean): Promise<ActivityWorker[]> {
    const { options, note } = this;
    const targets = workerTargets(this.plan);
    if (targets.length === 0) return [];
    if (!inProcess) {
      note('Agent steps wait for workers (--no-workers); run, in the workspace:');
      for (const target of targets) note(`  ${workerCommand(target, options.paths)}`);
      return [];
    }
    const activities = await ensureActivities(this.stack.sfn, this.plan, LOCAL_NAME_PREFIX);
    const { command: agentCommand, workspace } = this.agents;
    const perTarget = options.agentsPerTarget ?? IN_PROCESS_AGENTS_PER_TARGET;
    return targets.flatMap((target) =>
      Array.from({ length: perTarget }, (_, slot) => {
        const worker = new ActivityWorker({
          sfn: this.stack.sfn,
          activityArn: activities[target] as string,
          target,
          workspace,
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

  /** Who answers and where, and the plan's checklist. */
  private introduce(): void {
    this.note(
      `Answering as ${this.options.identity} (--as <name> to answer as someone else), here or on the approval page: links are printed with each gate.`,
    );
    if (this.slack) this.note(`Slack interactions: ${this.front.url}/slack/interactions`);
    // Plan text is the author's: a control sequence in it must not reach the terminal as one.
    if (!this.options.json) this.out(`\n${renderChecklist(this.plan)}\n`);
  }

  /** Follows the execution's journal from its start: every event is shown and written to the execution files. */
  private async followEvents(): Promise<EventFollower> {
    const { stack } = this;
    this.follower = new EventFollower({
      dynamo: stack.data.clients.doc,
      eventsTable: stack.data.tableNames.events,
      bus: stack.data.bus,
      executionId: this.executionArn,
      onEvent: (event) => this.onEvent(event),
    });
    await this.follower.start();
    return this.follower;
  }

  private async onEvent(event: JournalRecord): Promise<void> {
    const { options, progress, spinner } = this;
    await this.files.add(event);
    this.watch?.onEvent(event);
    if (DECISION_EVENTS.has(event.event)) await this.withdrawAnsweredElsewhere();
    if (event.event === 'FAILURE_CLASSIFIED' && event.task_id)
      this.failures.set(
        event.task_id,
        `${String(event.details.failure_type)} (${String(event.details.error)})`,
      );
    if (options.json) {
      options.io.stdout.write(`${JSON.stringify(event)}\n`);
      // Scripts read events on stdout; the final summary line still goes to a person.
      if (event.event === 'EXECUTION_COMPLETE') this.note(progress.lines(event).join('\n'));
    } else spinner.print(progress.lines(event).map(visibleText));
    spinner.update(progress.running());
  }

  /** A gate answered in another shell (plangate complete), by Slack or by a timeout: stop asking. */
  private async withdrawAnsweredElsewhere(): Promise<void> {
    for (const [linkId, question] of this.asked) {
      const settled = await this.desk.settled(linkId);
      if (settled === undefined) continue;
      question.withdraw(`Answered elsewhere: ${settled}`);
      this.asked.delete(linkId);
    }
  }

  /** A gate waits (a new one, or a revision of one): ask about it. */
  private askAbout(notice: ApprovalNotice): void {
    // A modification (here, on the page, in Slack or through the API) made a revision: what is
    // asked changed, so the question is asked again about it, and answers bind to its digest.
    if (notice.revision) {
      this.desk.revised(notice.approvalId, notice.revision.digest);
      this.asked
        .get(notice.approvalId)
        ?.withdraw(
          `Modified by ${notice.revision.by} (revision ${notice.revision.number}): asking again about what it now runs.`,
        );
      this.asked.delete(notice.approvalId);
    }
    this.ask(noticeGate(notice));
  }

  /** Asks a gate in the terminal (once), or answers it with `--approve` when policy lets it be. */
  private ask(gate: PendingGate): void {
    const { asked, options, plan, note } = this;
    if (asked.has(gate.linkId)) return;
    const hint = identityHint(
      gate.submittedBy === undefined && this.launchSubmitter !== undefined
        ? { ...gate, submittedBy: this.launchSubmitter }
        : gate,
      options.identity,
    );
    const question = this.question(gate, hint);
    const approving = gate.kind === 'plan' || gate.kind === 'step';
    if (approving && options.approve && !this.autoAnswered.has(gate.linkId)) {
      // What the gate approves is what will run: its revision's calls, not the plan as written.
      const runs = gate.revision ? planAsRevised(plan, gate.revision.argOverrides) : plan;
      const permittedBy = plan.approval.allowAutoApprove
        ? this.autoApproval(gate, gate.revision ? planFacts(runs) : this.facts)
        : undefined;
      // Underneath policy, whatever it permits: only what is proven read-only is approved on a
      // person's behalf.
      const unproven = unattendedApprovalRefusals(
        gate.revision ? planRisks(runs) : this.risks,
        gate.kind === 'step' ? (gate.stepId ?? '') : undefined,
      );
      if (permittedBy && unproven.length === 0) {
        this.autoAnswered.add(gate.linkId);
        // What is approved on the person's behalf is shown all the same.
        if (gate.shown) note(gateText(gate.shown, { timeZone: localTimeZone() }));
        note(
          `--approve: answering the ${gate.kind} gate APPROVE non-interactively as ${options.identity} (the plan's approval policy allows it).`,
        );
        asked.set(gate.linkId, { answer: Promise.resolve(undefined), withdraw: () => {} });
        this.record(gate, {
          decision: 'APPROVE',
          by: options.identity,
          comment: `auto-approved by ${options.identity} (--approve; policy ${permittedBy.join(', ') || 'none'})`,
        });
        return;
      }
      // One line says why a person is asked: the plan's policy, else the platform's (and what is
      // not proven read-only), else what is not proven.
      if (!plan.approval.allowAutoApprove)
        note("--approve: the plan's approval policy (allowAutoApprove: false) requires a person; asking.");
      else if (!permittedBy)
        note(
          `--approve: the platform's policy does not permit approving this gate non-interactively${unproven.length > 0 ? ` (and ${unprovenReasons(unproven)})` : ''}; asking.`,
        );
      else note(unprovenNote(gate.kind, unproven));
    }
    const by = options.identity;
    const pending = this.prompter.ask<GateAnswer>({
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
      if (answer) this.record(gate, answer);
    });
  }

  /**
   * The policies that let `--approve` answer this gate (AutoApprove: the plan, or the step at
   * its own gate, as the harness judged them in `facts`: the gate's revision's), named in the
   * vote's comment; undefined, after journaling POLICY_DECISION, when policy forbids it and a
   * person is asked.
   */
  private autoApproval(gate: PendingGate, facts: PlanFacts): readonly string[] | undefined {
    const { plan, options } = this;
    const identity = { id: plan.id, version: plan.version, digest: gate.planDigest };
    const submitter = gate.submittedBy ?? this.launchSubmitter;
    const planResource = planEntity(identity, facts, submitter);
    const request = {
      principal: { name: options.identity },
      action: 'AutoApprove' as const,
      ...(gate.kind === 'step' && gate.stepId !== undefined
        ? {
            resource: stepEntity(identity, gate.stepId, facts.steps[gate.stepId], { submitter }),
            entities: [planResource],
          }
        : { resource: planResource }),
      context: { gate: gate.kind },
    };
    const decided = this.policy.authorize(request);
    if (decided.decision === 'allow') return decided.determiningPolicies;
    const journaled = journalFor(this.stack.journalDeps())
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
          this.note(`policy decision not journaled: ${(error as Error).message}`);
        },
      )
      .finally(() => this.recording.delete(journaled));
    this.recording.add(journaled);
    return undefined;
  }

  /** Records an answer in the background (the run waits for it before it ends); asks again after a refusal. */
  private record(gate: PendingGate, answer: GateAnswer): void {
    const done = this.answer(gate, answer)
      .then((again) => {
        if (!again) return;
        this.asked.delete(gate.linkId);
        this.ask(gate);
      })
      .finally(() => this.recording.delete(done));
    this.recording.add(done);
  }

  /**
   * Records an answer through the front door and says what became of it (a refusal with its
   * reason, and who may answer instead). Returns whether the gate is to be asked again: the answer
   * was not valid, or not this identity's to give (another answer may still be).
   */
  private async answer(gate: PendingGate, answer: GateAnswer): Promise<boolean> {
    const { note } = this;
    const outcome = await this.desk.answer(gate.linkId, answer).catch((error: unknown) => ({
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
      const hint = identityHint(gate, this.options.identity);
      if (hint) note(hint);
      note(`The execution keeps waiting: Ctrl-C, then plangate resume ${this.executionArn} --as <name>.`);
    }
    return outcome.reason === 'invalid' || outcome.reason === 'forbidden';
  }

  /** What the terminal asks about a gate: what it is, exactly what the answer covers, the link to its page, the choices. */
  /** The question in the terminal: plan text through visibleText (gateText has already). */
  private question(gate: PendingGate, hint: string | undefined): string {
    const { plan } = this;
    const link = this.front.linkFor(gate.linkId, gate.planDigest);
    const found = gate.stepId ? plan.steps.find((s) => s.id === gate.stepId) : undefined;
    const step = found && { description: visibleText(found.description) };
    const lines = [''];
    if (gate.kind === 'plan') lines.push(`Approve plan "${plan.id}" v${plan.version}? (round ${gate.round})`);
    else if (gate.kind === 'step')
      lines.push(`Step "${step?.description ?? gate.stepId}" needs approval before it runs.`);
    else if (gate.kind === 'human') {
      lines.push(
        `Step "${step?.description ?? gate.stepId}" is yours to do: ${visibleText(gate.human?.instructions ?? '')}`,
      );
      const outputs = gate.human?.outputs ?? found?.outputs ?? [];
      if (outputs.length > 0)
        lines.push(`When it is done, report: ${outputs.map((o) => `${o}=…`).join(' ')}`);
    } else {
      const failure = gate.failure
        ? `${gate.failure.failureClass} (${gate.failure.error}): ${gate.failure.message}`
        : (this.failures.get(gate.stepId ?? '') ?? 'failed');
      lines.push(`Step "${step?.description ?? gate.stepId}" failed: ${short(visibleText(failure))}`);
      if (gate.failure?.policyDenial) lines.push(visibleText(gate.failure.policyDenial.advice));
      else if (gate.failure?.failureClass === 'permission')
        lines.push(
          'Configure the credentials out of band (environment, vault, config file) before you retry.',
        );
    }
    if (gate.question) lines.push(`Question asked: ${visibleText(gate.question)}`);
    // What the approval covers, exactly: every command, contract, rollback and risk (in this machine's time zone).
    if (gate.shown) lines.push(gateText(gate.shown, { timeZone: localTimeZone() }), '');
    if (hint) lines.push(hint);
    lines.push(`Answer here or open ${link}`);
    lines.push(
      ...(gate.kind === 'escalation'
        ? [
            ...(gate.failure?.policyDenial ? POLICY_DENIED_CHOICES : ESCALATION_CHOICES),
            ...(gate.shown?.recovery ? [ACCEPT_CHOICE] : []),
          ]
        : gate.kind === 'human'
          ? HUMAN_CHOICES
          : GATE_CHOICES),
    );
    return lines.join('\n');
  }

  /** How the execution ended; undefined when the session was interrupted first. */
  private async waitForEnd(): Promise<DescribeExecutionCommandOutput | undefined> {
    for (;;) {
      if (this.interrupted) return undefined;
      const described = await this.stack.sfn.send(
        new DescribeExecutionCommand({ executionArn: this.executionArn }),
      );
      if (described.status !== 'RUNNING' && described.status !== 'PENDING_REDRIVE') return described;
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** Stops everything this session started; the execution keeps its state in the store. */
  private async close(): Promise<void> {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    this.spinner.stop();
    this.follower?.stop();
    this.watch?.stop();
    // A task in progress is failed (the recipe retries it on the next run or resume).
    await Promise.all(this.workers.map((worker) => worker.stop('fail')));
    this.prompter.close();
    await this.front.close();
    await this.stack.close();
    await releaseSession(this.options.paths);
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

/** The command that starts a worker of `target` for this store. */
function workerCommand(target: string, paths: StorePaths): string {
  return `plangate worker --target ${target} --store ${paths.root} --agent-command "<agent>"`;
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
  const { startLocalDynamo } = await import('../aws-local/dynamo.ts');
  const { localClients } = await import('../aws-local/clients.ts');
  const { documentClient } = await import('../runtime/journal/document-client.ts');
  const { DEFAULT_TABLE_NAMES } = await import('../runtime/journal/tables.ts');
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

/**
 * Notices from the gate Lambda, each a gate that waits (a new one, or a revision of one): handed
 * to whoever listens (the session, once it is attached), and posted to Slack if configured.
 */
class GateNotices {
  /** The run's stack, once it is up: the front door answers from then on. */
  readonly stack: Promise<LocalRunStack>;
  private stackUp: (stack: LocalRunStack) => void = () => {};
  /** Where the Slack messages' links point: the front door (listening before the stack starts). */
  private frontUrl = '';
  private listener: ((notice: ApprovalNotice) => void) | undefined;
  private readonly early: ApprovalNotice[] = [];
  private postToSlack: ((notice: ApprovalNotice) => Promise<unknown>) | undefined;

  constructor(
    private readonly slack: LocalSlackApp | undefined,
    private readonly note: (text: string) => void,
  ) {
    this.stack = new Promise((resolve) => {
      this.stackUp = resolve;
    });
  }

  /** The stack is up, and the front door listens at `frontUrl`. */
  up(stack: LocalRunStack, frontUrl: string): void {
    this.frontUrl = frontUrl;
    this.stackUp(stack);
  }

  /** Tells people a gate waits: this terminal, and Slack if configured. */
  readonly notify = async (notice: ApprovalNotice): Promise<void> => {
    this.post(notice);
    if (!this.slack) return;
    this.postToSlack ??= await this.slackNotifier(this.slack);
    // As on AWS, a notice that could not be posted does not hold the gate up.
    await this.postToSlack(notice).catch((error: unknown) =>
      this.note(`Slack: not posted: ${(error as Error).message}`),
    );
  };

  onNotice(listener: (notice: ApprovalNotice) => void): void {
    this.listener = listener;
    for (const notice of this.early.splice(0)) listener(notice);
  }

  private post(notice: ApprovalNotice): void {
    if (this.listener) this.listener(notice);
    else this.early.push(notice);
  }

  /** The notifier Lambda's work, with links to the front door. */
  private async slackNotifier(slack: LocalSlackApp): Promise<(notice: ApprovalNotice) => Promise<unknown>> {
    const stack = await this.stack;
    return slack.notifier(this.frontUrl, stack.journalDeps('notifier'));
  }
}

/** Most reasons a refused `--approve` lists; the gate shows them all. */
const UNPROVEN_SHOWN = 3;

/** Why `--approve` leaves a gate to a person: what it covers is not proven read-only. */
export function unprovenNote(kind: string, reasons: readonly string[]): string {
  return `--approve: a person must approve this ${kind} gate, ${unprovenReasons(reasons)}; asking.`;
}

/** "what it covers is not proven read-only: …", the first reasons and how many more the gate shows. */
function unprovenReasons(reasons: readonly string[]): string {
  const shown = reasons.slice(0, UNPROVEN_SHOWN).join('; ');
  const more =
    reasons.length > UNPROVEN_SHOWN ? ` (and ${reasons.length - UNPROVEN_SHOWN} more, on the gate)` : '';
  return `what it covers is not proven read-only: ${shown}${more}`;
}
