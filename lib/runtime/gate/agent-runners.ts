/**
 * What the gate adds to an agent step's view where it opens: the compiled view says what the plan
 * says (the worker taking the target, its time limit and budget); the host that runs the agents
 * (`plangate run` with its own workers) knows the command they run and where they work.
 */
import type { AgentStepView, GateRequest, StepView } from '../payloads/index.ts';

/** What the host knows of who runs one target's agent steps; undefined: nothing more than the plan says. */
export type AgentRunners = (
  target: string,
  runsOn: AgentStepView['runsOn'],
) => Partial<Pick<AgentStepView, 'runs' | 'command' | 'workspace' | 'reach'>> | undefined;

/** `req` with each agent step of its view (plan gate) or its step's view (step gate) completed by `runners`. */
export function withAgentRunners(req: GateRequest, runners: AgentRunners | undefined): GateRequest {
  if (!runners) return req;
  const complete = (step: StepView): StepView => {
    if (!step.agent) return step;
    // An agent tool step may name no target: its runner does not need one.
    const known = runners(step.target ?? '', step.agent.runsOn);
    if (!known) return step;
    // A command the step names itself is the one that runs, whatever its runner is given.
    const command = step.agent.command ?? known.command;
    return { ...step, agent: { ...step.agent, ...known, ...(command !== undefined ? { command } : {}) } };
  };
  const view = req.summary?.view;
  return {
    ...req,
    ...(req.summary && view
      ? { summary: { ...req.summary, view: { ...view, steps: view.steps.map(complete) } } }
      : {}),
    ...(req.view ? { view: complete(req.view) } : {}),
  };
}
