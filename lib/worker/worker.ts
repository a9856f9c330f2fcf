/**
 * A worker of one agent target (seed 004's T3 agents, the AWS way): it long-polls the target's
 * Step Functions activity, writes the handoff, runs the agent command in the workspace with the
 * task on stdin, keeps the task alive with heartbeats, and then — the agent never reports
 * completion — runs the step's contract (from the approved definition, never from the agent or
 * the workspace) in a separate process in the same workspace and returns the evidence. The
 * contract checker records it; only a passing contract completes the step.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GetActivityTaskCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import { outputShapeMismatch } from '../plan/output-shapes.ts';
import type { Contract, Plan } from '../plan/schema.ts';
import { type ContractEvidence, checkContract } from '../runtime/contracts/contracts.ts';
import {
  AGENT_LOG_TAIL_BYTES,
  AGENT_OUTPUT_TAIL_BYTES,
  AGENT_REPORT_CHARACTERS,
  AGENT_REPORT_ENTRIES,
  type AgentRun,
  type Handoff,
  HandoffSchema,
  type RunnerResult,
  type Usage,
} from '../runtime/payloads/index.ts';
import { withSandboxScope } from '../runtime/sandbox/sandbox.ts';
import { Redactor } from '../runtime/secrets/redact.ts';
import { OUTPUT_SHAPE_MISMATCH } from '../runtime/shared/errors.ts';
import { type ProcessResult, runProcess } from '../runtime/shared/process.ts';
import { truncateStart, truncateText } from '../runtime/shared/truncate.ts';
import { agentPrompt, agentTimeoutSeconds, renderHandoff } from '../runtime/steps/handoff.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';
import { agentUsage } from '../runtime/tools/agent-usage.ts';
import { parseOutputs } from '../runtime/tools/outputs-file.ts';
import { changedFiles, snapshotWorkspace } from './workspace-changes.ts';

/** Bytes of the agent's stdout read for its usage line (Claude Code's JSON result can be long). */
const AGENT_STDOUT_BYTES = 1024 * 1024;

export interface WorkerOptions {
  readonly sfn: SFNClient;
  readonly activityArn: string;
  readonly target: string;
  /** Where the agent works and the contract runs. */
  readonly workspace: string;
  /** The agent: a shell command that reads the task on stdin (e.g. `claude -p`); unset fails each task, saying so. */
  readonly agentCommand: string | undefined;
  /**
   * The engine's time scale (plangate run --time-scale): heartbeats keep up with a scaled
   * HeartbeatSeconds. @default 1
   */
  readonly timeScale?: number;
  /** @default `<host>:<pid>` */
  readonly workerName?: string;
  /** One line per task taken and finished. */
  readonly log: (line: string) => void;
  /** Take one task, then stop. @default false */
  readonly once?: boolean;
  /** Bytes of the agent's stdout/stderr kept in the step's output. @default 2048 */
  readonly keepBytes?: number;
  /**
   * The approved plans, by digest (a local store's): with it, the contract run is the approved
   * plan's own and a handoff of a plan it does not hold is refused. Without it (an engine
   * endpoint, AWS), the contract is the literal the approved definition put in the handoff.
   */
  readonly approvedPlan?: (digest: string) => Promise<Plan | undefined>;
}

/** What `stop()` does to a task in progress. */
export type StopMode = 'finish' | 'fail';

export class ActivityWorker {
  readonly workerName: string;
  private stopping: StopMode | undefined;
  private readonly polls = new AbortController();
  private readonly agentRuns = new AbortController();
  private current: Promise<void> | undefined;

  constructor(private readonly options: WorkerOptions) {
    this.workerName = options.workerName ?? `${hostname()}:${process.pid}`.slice(0, 80);
  }

  get target(): string {
    return this.options.target;
  }

  get activityArn(): string {
    return this.options.activityArn;
  }

  /** Polls and works until stopped (or after one task with `once`). */
  async run(): Promise<void> {
    while (!this.stopping) {
      const task = await this.options.sfn
        .send(
          new GetActivityTaskCommand({
            activityArn: this.options.activityArn,
            workerName: this.workerName,
          }),
          { abortSignal: this.polls.signal },
        )
        .catch((error: unknown): { taskToken?: string; input?: string } => {
          if (this.stopping) return {};
          throw error;
        });
      if (!task.taskToken) continue;
      this.current = this.work(task.taskToken, task.input ?? '{}');
      await this.current;
      this.current = undefined;
      if (this.options.once) break;
    }
  }

  /**
   * Stops polling. `finish` lets a task in progress end normally; `fail` stops its agent and
   * answers SendTaskFailure, so the step is retried at once instead of waiting for a timeout.
   */
  async stop(mode: StopMode = 'fail'): Promise<void> {
    this.stopping = mode;
    this.polls.abort();
    if (mode === 'fail') this.agentRuns.abort();
    await this.current;
  }

  private async work(token: string, input: string): Promise<void> {
    const { sfn, log } = this.options;
    const parsed = HandoffSchema.safeParse(safeJson(input));
    if (!parsed.success) {
      log(`✗ refused a task that is not a plangate handoff: ${parsed.error.issues[0]?.message ?? ''}`);
      await sfn.send(
        new SendTaskFailureCommand({
          taskToken: token,
          error: 'Worker.InvalidHandoff',
          cause: 'not a handoff',
        }),
      );
      return;
    }
    const handoff = parsed.data;
    const contract = await this.approvedContract(handoff);
    if (contract.kind === 'refused') {
      log(`✗ refused ${handoff.stepId}: ${contract.message}`);
      await sfn
        .send(
          new SendTaskFailureCommand({
            taskToken: token,
            error: contract.error,
            cause: JSON.stringify({ message: contract.message }),
          }),
        )
        // A task already ended needs no answer; the worker goes on either way.
        .catch((error: unknown) =>
          log(`✗ ${handoff.stepId}: the refusal was refused (${(error as Error).name})`),
        );
      return;
    }
    const label = `${handoff.stepId} (attempt ${handoff.attempt}, task ${handoff.index}/${handoff.total} of ${handoff.plan.id})`;
    log(`▶ ${this.workerName} took ${label}`);
    const started = performance.now();
    const beat = setInterval(
      () => {
        sfn.send(new SendTaskHeartbeatCommand({ taskToken: token })).catch((error: unknown) => {
          // The task is gone (timed out, execution stopped): stop working on it.
          log(`✗ ${handoff.stepId}: heartbeat refused (${(error as Error).name}); stopping the agent`);
          lost.abort();
        });
      },
      Math.max(100, (handoff.heartbeatSeconds * 1000 * (this.options.timeScale ?? 1)) / 3),
    );
    const lost = new AbortController();
    const dir = await mkdtemp(join(tmpdir(), 'plangate-task-'));
    try {
      const outcome = await this.attempt(
        handoff,
        contract.contract,
        dir,
        AbortSignal.any([lost.signal, this.agentRuns.signal]),
      );
      if (lost.signal.aborted) return;
      if (outcome.kind === 'failed') {
        // The cause is a failure cause (message, who ran it, and what the agent used: spent all the same).
        const cause = {
          message: outcome.message,
          worker: this.workerName,
          exitCode: outcome.exitCode,
          usage: outcome.usage,
          agentRun: outcome.agentRun,
        };
        await sfn.send(
          new SendTaskFailureCommand({
            taskToken: token,
            error: outcome.error,
            cause: JSON.stringify(cause),
          }),
        );
        log(`✗ ${handoff.stepId}: ${outcome.message}`);
        return;
      }
      const result: RunnerResult = {
        stepId: handoff.stepId,
        attempt: handoff.attempt,
        status: 'succeeded',
        output: outcome.output,
        durationMs: Math.round(performance.now() - started),
        worker: this.workerName,
        usage: outcome.usage,
        evidence: outcome.evidence && { ...outcome.evidence },
        agentRun: outcome.agentRun,
      };
      await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(result) }));
      log(
        `${outcome.evidence?.passed === false ? '✗' : '✓'} ${handoff.stepId}: agent exited 0; contract ${outcome.evidence?.summary ?? 'left to the checker'}`,
      );
    } catch (error) {
      if (taskGone(error)) {
        // Step Functions already ended the task (it timed out): its recipe decides, not this worker.
        log(
          `✗ ${handoff.stepId}: the result was refused (${(error as Error).name}): the task ended before it was sent`,
        );
        return;
      }
      log(`✗ ${handoff.stepId}: ${(error as Error).message}`);
      await sfn
        .send(
          new SendTaskFailureCommand({
            taskToken: token,
            error: 'Worker.Error',
            cause: (error as Error).message,
          }),
        )
        .catch(() => {});
    } finally {
      clearInterval(beat);
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The contract to run: the approved plan's, when the worker holds the plans; else the handoff's. */
  private async approvedContract(
    handoff: Handoff,
  ): Promise<
    { kind: 'ok'; contract: Contract | undefined } | { kind: 'refused'; error: string; message: string }
  > {
    const lookup = this.options.approvedPlan;
    if (!lookup) return { kind: 'ok', contract: handoff.contract };
    let plan: Plan | undefined;
    try {
      plan = await lookup(handoff.plan.digest);
    } catch (error) {
      return {
        kind: 'refused',
        error: 'Worker.Error',
        message: `the approved plan ${handoff.plan.digest} could not be read: ${(error as Error).message}`,
      };
    }
    if (!plan)
      return {
        kind: 'refused',
        error: 'Worker.UnknownPlan',
        message: `the handoff names plan ${handoff.plan.id} (${handoff.plan.digest}), which is not an approved plan this worker holds`,
      };
    const step = plan.steps.find((s) => s.id === handoff.stepId);
    if (!step)
      return {
        kind: 'refused',
        error: 'Worker.UnknownStep',
        message: `plan ${handoff.plan.id} (${handoff.plan.digest}) has no step "${handoff.stepId}"`,
      };
    return { kind: 'ok', contract: step.contract };
  }

  private async attempt(
    handoff: Handoff,
    contract: Contract | undefined,
    dir: string,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const { workspace, agentCommand, log } = this.options;
    const keep = this.options.keepBytes ?? 2048;
    if (!agentCommand)
      return {
        kind: 'failed',
        error: 'NotConfigured',
        message: `no agent is configured: set ${AGENT_COMMAND_ENV} to a command that reads the task on stdin (e.g. "claude -p")`,
      };
    const handoffFile = join(dir, 'handoff.md');
    const outputFile = join(dir, 'outputs');
    const logFile = join(dir, 'log');
    const reportFile = join(dir, 'report');
    await writeFile(handoffFile, renderHandoff(handoff));
    for (const file of [outputFile, logFile, reportFile]) await writeFile(file, '');
    const prompt = agentPrompt(handoff);
    const timeoutSeconds = agentTimeoutSeconds(handoff);
    const before = await snapshotWorkspace(workspace);
    // The task directory (handoff, outputs, log, report) is writable to this agent alone; the
    // step's declared hosts are reachable through the proxy.
    const reach = handoff.network ? { network: handoff.network } : {};
    const agent = await withSandboxScope({ writable: [dir], ...reach }, () =>
      runProcess({
        command: agentCommand,
        cwd: workspace,
        stdin: prompt,
        // The agent tool's environment (lib/runtime/tools/agent.ts), plus the handoff's path.
        env: {
          PLANGATE_TASK: prompt,
          PLANGATE_TARGET: handoff.target,
          PLANGATE_STEP_ID: handoff.stepId,
          PLANGATE_SUBSCRIPTIONS: handoff.subscriptions.join('\n'),
          PLANGATE_OUTPUT: outputFile,
          PLANGATE_HANDOFF: handoffFile,
          PLANGATE_LOG: logFile,
          PLANGATE_REPORT: reportFile,
          PLANGATE_ATTEMPT: String(handoff.attempt),
        },
        timeoutMs: timeoutSeconds * 1000,
        maxOutputBytes: AGENT_STDOUT_BYTES,
        signal,
      }),
    );
    const report = agentUsage(agent.stdout);
    if (report.kind === 'invalid') log(`✗ ${handoff.stepId}: usage not counted: ${report.problem}`);
    const usage = report.kind === 'usage' ? report.usage : undefined;
    const agentRun = agentRunOf(agentCommand, agent, {
      log: await readFile(logFile, 'utf8'),
      report: await readFile(reportFile, 'utf8'),
      filesModified: before ? await changedFiles(workspace, before) : undefined,
    });
    const spent = { agentRun, usage };
    if (agent.aborted)
      return { kind: 'failed', error: 'Worker.Stopped', message: 'the worker stopped the agent', ...spent };
    if (agent.timedOut)
      return {
        kind: 'failed',
        error: 'TimeoutError',
        message: `agent timed out after ${timeoutSeconds} s${timeoutSeconds < handoff.timeoutSeconds ? " (the plan's wall-clock budget left)" : ''}`,
        ...spent,
      };
    if (agent.exitCode !== 0)
      return {
        kind: 'failed',
        error: 'AgentFailed',
        message: `agent exited ${agent.exitCode ?? `on ${agent.signal}`}: ${lastLine(agent.stderr)}`,
        exitCode: agent.exitCode ?? undefined,
        ...spent,
      };
    const named = parseOutputs(await readFile(outputFile, 'utf8'));
    const output: Record<string, unknown> = {};
    if (handoff.outputs.length === 0) {
      Object.assign(output, {
        target: handoff.target,
        exitCode: agent.exitCode,
        response: truncateText(agent.stdout, keep).text,
        outputs: named,
      });
    } else {
      for (const name of handoff.outputs) {
        if (!Object.hasOwn(named, name))
          return {
            kind: 'failed',
            error: 'Worker.MissingOutput',
            message: `the agent did not produce the declared output "${name}"`,
            ...spent,
          };
        output[name] = named[name];
      }
    }
    // A value that does not fit its shape fails here, before the contract below reads it.
    const mismatch = await outputShapeMismatch(output, handoff.outputShapes);
    if (mismatch)
      return { kind: 'failed', error: OUTPUT_SHAPE_MISMATCH, message: mismatch.message, ...spent };
    // Workspace contracts run here, where the work is; the checker runs any other kind itself.
    if (contract?.kind !== 'command') return { kind: 'done', output, ...spent };
    const evidence = await withSandboxScope(handoff.network ? { network: handoff.network } : {}, () =>
      checkContract(
        contract,
        {
          output,
          context: {},
          steps: { ...compact(handoff.inputs), [handoff.stepId]: output },
        },
        { cwd: workspace },
      ),
    );
    return { kind: 'done', output, evidence, ...spent };
  }
}

type Outcome =
  | {
      kind: 'failed';
      error: string;
      message: string;
      exitCode?: number;
      usage?: Usage;
      agentRun?: AgentRun;
    }
  | {
      kind: 'done';
      output: Record<string, unknown>;
      evidence?: ContractEvidence;
      usage?: Usage;
      agentRun: AgentRun;
    };

/**
 * What the attempt's agent ran and said, bounded and with credential shapes redacted (it leaves
 * the worker for the journal): its command and exit, the end of its output and of its work log
 * ($PLANGATE_LOG), the files it changed, and its report ($PLANGATE_REPORT: `summary:`, `blocker:`
 * and `deviation:` lines).
 */
function agentRunOf(
  command: string,
  agent: ProcessResult,
  said: { log: string; report: string; filesModified: string[] | undefined },
): AgentRun {
  const redactor = new Redactor();
  const clean = (text: string, bytes: number) => redactor.text(truncateStart(text, bytes));
  const lines = (prefix: string) =>
    said.report
      .split('\n')
      .filter((line) => line.toLowerCase().startsWith(`${prefix}:`))
      .map((line) => redactor.text(line.slice(prefix.length + 1).trim()).slice(0, AGENT_REPORT_CHARACTERS))
      .filter(Boolean)
      .slice(0, AGENT_REPORT_ENTRIES);
  const summary = lines('summary').join(' ');
  return {
    command: redactor.text(command).slice(0, AGENT_REPORT_CHARACTERS),
    exitCode: agent.exitCode,
    signal: agent.signal ?? undefined,
    durationMs: agent.durationMs,
    stdout: clean(agent.stdout, AGENT_OUTPUT_TAIL_BYTES),
    stderr: clean(agent.stderr, AGENT_OUTPUT_TAIL_BYTES),
    log: said.log.trim() ? clean(said.log, AGENT_LOG_TAIL_BYTES) : undefined,
    filesModified: said.filesModified,
    ...(summary ? { summary } : {}),
    blockers: lines('blocker'),
    deviations: lines('deviation'),
    sandboxed: agent.sandboxed,
    ...(agent.network.length > 0 ? { network: redactor.value(agent.network) as AgentRun['network'] } : {}),
    ...(agent.refusedWrites.length > 0
      ? {
          refusedWrites: agent.refusedWrites.map((line) =>
            redactor.text(line).slice(0, AGENT_REPORT_CHARACTERS),
          ),
        }
      : {}),
  };
}

/** Step Functions refused a task answer because the task already ended (timed out, execution stopped). */
function taskGone(error: unknown): boolean {
  const name = (error as Error | undefined)?.name;
  return name === 'TaskTimedOut' || name === 'TaskDoesNotExist';
}

function compact(inputs: Handoff['inputs']): Record<string, Readonly<Record<string, unknown>> | undefined> {
  return Object.fromEntries(Object.entries(inputs).map(([id, v]) => [id, v ?? undefined]));
}

function lastLine(text: string): string {
  return text.trim().split('\n').pop() ?? '';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
