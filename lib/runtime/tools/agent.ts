/**
 * The `agent` tool (seed 004's coder/reviewer targets): runs the configured agent command with the
 * task text on stdin and the step's subscriptions in the environment. The agent only does work;
 * its exit code and output never complete the step (the contract does).
 */
import { AgentFailedError, NotConfiguredError, TimeoutError } from '../shared/errors.ts';
import { runProcess } from '../shared/process.ts';
import { agentUsage } from './agent-usage.ts';
import { OUTPUT_FILE_ENV, withOutputsFile } from './outputs-file.ts';
import type { ToolContext, ToolOutput } from './types.ts';

/** The environment variable naming the agent command. */
export const AGENT_COMMAND_ENV = 'PLANGATE_AGENT_COMMAND';

export interface AgentInput {
  /** Overrides the step's task text. */
  readonly task?: string;
  /** The agent role; overrides the step's target. */
  readonly agent?: string;
  /** Overrides $PLANGATE_AGENT_COMMAND for this step. */
  readonly command?: string;
  readonly timeoutSeconds?: number;
}

/**
 * Environment given to the agent: PLANGATE_TASK, PLANGATE_TARGET, PLANGATE_STEP_ID,
 * PLANGATE_SUBSCRIPTIONS (newline-separated) and PLANGATE_OUTPUT.
 */
export async function runAgent(input: AgentInput, ctx: ToolContext): Promise<ToolOutput> {
  const env = ctx.env ?? process.env;
  const command = input.command ?? env[AGENT_COMMAND_ENV];
  const location = `steps.${ctx.stepId}`;
  if (!command) {
    throw new NotConfiguredError(
      `no agent is configured: set ${AGENT_COMMAND_ENV} to a command that reads the task on stdin (e.g. "claude -p")`,
      { location },
    );
  }
  const task = input.task ?? ctx.task;
  if (!task)
    throw new NotConfiguredError('the agent tool needs task text (the step\'s "task")', { location });
  const target = input.agent ?? ctx.target ?? '';
  const timeoutMs = Math.min(
    input.timeoutSeconds ? input.timeoutSeconds * 1000 : ctx.timeoutMs,
    ctx.timeoutMs,
  );
  const { result, outputs } = await withOutputsFile((outputFile) =>
    runProcess({
      command,
      cwd: ctx.cwd,
      stdin: task,
      env: {
        PLANGATE_TASK: task,
        PLANGATE_TARGET: target,
        PLANGATE_STEP_ID: ctx.stepId,
        PLANGATE_SUBSCRIPTIONS: ctx.subscriptions.join('\n'),
        [OUTPUT_FILE_ENV]: outputFile,
      },
      timeoutMs,
      signal: ctx.signal,
    }),
  );
  if (result.timedOut) throw new TimeoutError(`agent timed out after ${timeoutMs} ms`, { location });
  // The tokens and cost the agent says it used count against the plan's budget, as a worker's do.
  const report = agentUsage(result.stdout);
  const output = {
    target,
    exitCode: result.exitCode,
    response: result.stdout,
    stderr: result.stderr,
    outputs,
    ...(report.kind === 'usage' ? { usage: report.usage } : {}),
  };
  if (result.exitCode !== 0) {
    throw new AgentFailedError(`agent exited ${result.exitCode ?? `on ${result.signal}`}`, {
      exitCode: result.exitCode ?? 128,
      output,
      location,
    });
  }
  return output;
}
