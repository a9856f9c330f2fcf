/**
 * How long plan code may run where the step runner, the contract checker and the plan-process
 * function run it on AWS: Lambda's longest invocation, 900 s (lib/runtime/catalog.ts gives those
 * three functions this timeout). A step's tool, a contract, a rollback or a postcondition allowed
 * longer would be cut off by Lambda, not by its own timeout: the validator refuses it. Agent steps
 * (and their contracts) run on workers, and a person's step waits on a task token: neither is bound.
 */
import { effectiveTimeoutSeconds, runsOnWorker } from './agent-steps.ts';
import type { Contract, Plan } from './schema.ts';

/** Lambda's maximum timeout, the one the functions that run plan code have. */
export const FUNCTION_TIMEOUT_SECONDS = 900;

/**
 * What the step runner needs beyond its tool's timeout to stop the tool, record the failure and
 * answer. The step's Task state waits this much longer than the tool may run, and a tool runs at
 * most the function's time less this, so a hung attempt is ended by the tool's own timeout, once,
 * and not also by the machine's (or the function's) while the runner records it.
 */
export const RUNNER_MARGIN_SECONDS = 30;

/** The longest a step's tool runs on a function: the runner's margin still fits in the function's time. */
export const TOOL_TIME_LIMIT_SECONDS = FUNCTION_TIMEOUT_SECONDS - RUNNER_MARGIN_SECONDS;

export interface FunctionTimeoutProblem {
  readonly message: string;
  readonly pointer: string;
}

const beyond = (what: string, seconds: number) =>
  `${what} may run ${seconds} s, longer than the ${FUNCTION_TIMEOUT_SECONDS} s a Lambda function runs (on AWS the step runner, contract checker and plan-process function run it): at most ${FUNCTION_TIMEOUT_SECONDS} s, or make it an agent step a worker runs`;

/** Every time limit of the plan's Lambda-run code that is longer than a function may run. */
export function functionTimeoutProblems(plan: Plan): FunctionTimeoutProblem[] {
  const problems: FunctionTimeoutProblem[] = [];
  const contract = (c: Contract | undefined, what: string, pointer: string) => {
    if (c && c.kind !== 'assert' && c.timeoutSeconds > FUNCTION_TIMEOUT_SECONDS)
      problems.push({ message: beyond(what, c.timeoutSeconds), pointer: `${pointer}/timeoutSeconds` });
  };
  const argsTimeout = (args: Record<string, unknown>, what: string, pointer: string) => {
    const seconds = args.timeoutSeconds;
    if (typeof seconds === 'number' && seconds > FUNCTION_TIMEOUT_SECONDS)
      problems.push({ message: beyond(what, seconds), pointer: `${pointer}/timeoutSeconds` });
  };
  plan.steps.forEach((step, i) => {
    const at = `/steps/${i}`;
    // A worker runs an agent step and its contract; a person's step waits for them on a task token.
    if (runsOnWorker(step) || step.requiresHuman) return;
    const seconds = effectiveTimeoutSeconds(step, plan.budget);
    if (seconds > FUNCTION_TIMEOUT_SECONDS)
      problems.push({ message: beyond(`step "${step.id}"`, seconds), pointer: `${at}/timeoutSeconds` });
    argsTimeout(step.args, `step "${step.id}"'s command`, `${at}/args`);
    contract(step.contract, `the contract of step "${step.id}"`, `${at}/contract`);
    if (step.rollback) {
      argsTimeout(step.rollback.args, `the rollback of step "${step.id}"`, `${at}/rollback/args`);
      contract(
        step.rollback.contract,
        `the rollback contract of step "${step.id}"`,
        `${at}/rollback/contract`,
      );
    }
  });
  plan.postconditions.forEach((p, i) => {
    contract(p.contract, `postcondition "${p.id}"`, `/postconditions/${i}/contract`);
  });
  return problems;
}
