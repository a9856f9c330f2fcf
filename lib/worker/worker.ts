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
import { checkContract, type Evidence } from '../runtime/contracts/contracts.ts';
import type { RunnerResult } from '../runtime/payloads/index.ts';
import { runProcess } from '../runtime/shared/process.ts';
import { truncateText } from '../runtime/shared/truncate.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';
import { parseOutputs } from '../runtime/tools/outputs-file.ts';
import { agentPrompt, type Handoff, HandoffSchema, renderHandoff } from './handoff.ts';

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
      const outcome = await this.attempt(handoff, dir, AbortSignal.any([lost.signal, this.agentRuns.signal]));
      if (lost.signal.aborted) return;
      if (outcome.kind === 'failed') {
        await sfn.send(
          new SendTaskFailureCommand({ taskToken: token, error: outcome.error, cause: outcome.message }),
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
        ...(outcome.evidence ? { evidence: { ...outcome.evidence } } : {}),
      };
      await sfn.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(result) }));
      log(
        `${outcome.evidence?.passed === false ? '✗' : '✓'} ${handoff.stepId}: agent exited 0; contract ${outcome.evidence?.summary ?? 'left to the checker'}`,
      );
    } catch (error) {
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

  private async attempt(handoff: Handoff, dir: string, signal: AbortSignal): Promise<Outcome> {
    const { workspace, agentCommand } = this.options;
    const keep = this.options.keepBytes ?? 2048;
    if (!agentCommand)
      return {
        kind: 'failed',
        error: 'NotConfigured',
        message: `no agent is configured: set ${AGENT_COMMAND_ENV} to a command that reads the task on stdin (e.g. "claude -p")`,
      };
    const handoffFile = join(dir, 'handoff.md');
    const outputFile = join(dir, 'outputs');
    await writeFile(handoffFile, renderHandoff(handoff));
    await writeFile(outputFile, '');
    const prompt = agentPrompt(handoff);
    const agent = await runProcess({
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
        PLANGATE_ATTEMPT: String(handoff.attempt),
      },
      timeoutMs: handoff.timeoutSeconds * 1000,
      signal,
    });
    if (agent.aborted)
      return { kind: 'failed', error: 'Worker.Stopped', message: 'the worker stopped the agent' };
    if (agent.timedOut)
      return {
        kind: 'failed',
        error: 'TimeoutError',
        message: `agent timed out after ${handoff.timeoutSeconds} s`,
      };
    if (agent.exitCode !== 0)
      return {
        kind: 'failed',
        error: 'ToolFailed',
        message: `agent exited ${agent.exitCode ?? `on ${agent.signal}`}: ${lastLine(agent.stderr)}`,
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
          };
        output[name] = named[name];
      }
    }
    // Workspace contracts run here, where the work is; the checker runs any other kind itself.
    if (handoff.contract?.kind !== 'command') return { kind: 'done', output };
    const evidence = await checkContract(
      handoff.contract,
      {
        output,
        context: {},
        steps: { ...compact(handoff.inputs), [handoff.stepId]: output },
      },
      { cwd: workspace },
    );
    return { kind: 'done', output, evidence };
  }
}

type Outcome =
  | { kind: 'failed'; error: string; message: string }
  | { kind: 'done'; output: Record<string, unknown>; evidence?: Evidence };

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
