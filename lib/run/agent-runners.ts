/**
 * Who runs the agent steps of a `plangate run`, as its gates show them: its own workers (the
 * command they run, $PLANGATE_AGENT_COMMAND, in the directory it was started in), or, with
 * --no-workers, whichever `plangate worker` takes the target. The step runner's `agent` tool
 * runs the same command in the same directory.
 */
import { workerTargetText } from '../plan/agent-steps.ts';
import type { AgentRunners } from '../runtime/gate/agent-runners.ts';
import { sandboxSentence } from '../runtime/sandbox/sandbox.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';

export class RunAgents {
  /** Whether this run's own workers take its agent steps: as asked, until the execution's settings say. */
  inProcess: boolean;

  constructor(
    /** The agent command ($PLANGATE_AGENT_COMMAND); undefined: not set, each attempt fails saying so. */
    readonly command: string | undefined,
    /** Where the run's own workers and the step runner run agents. */
    readonly workspace: string,
    inProcess: boolean,
  ) {
    this.inProcess = inProcess;
  }

  /** What the gate adds to each agent step's view. */
  readonly runners: AgentRunners = (target, runsOn) => {
    if (runsOn === 'worker' && !this.inProcess) return { runs: workerTargetText(target) };
    const who =
      runsOn === 'worker' ? `plangate run's own workers of target ${target}` : "plangate run's step runner";
    return {
      runs:
        this.command !== undefined
          ? `${who}, running $${AGENT_COMMAND_ENV}`
          : `${who}; $${AGENT_COMMAND_ENV} is not set, so each attempt fails until it is`,
      ...(this.command !== undefined ? { command: this.command } : {}),
      workspace: this.workspace,
      // Its own workers and step runner run agents in this machine's sandbox.
      reach: sandboxSentence(),
    };
  };
}
