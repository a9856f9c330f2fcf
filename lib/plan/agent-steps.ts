/**
 * What an agent step (a `target`, no `tool`, not a person's) needs to be runnable on a worker:
 * the rules the compiler builds its activity Task by and the validator checks before any gate,
 * kept here so both read the same facts.
 */
import type { Plan, Step } from './schema.ts';

/** An agent step (a target, no tool, not a person's): a worker polling its target's activity does it. */
export function runsOnWorker(step: Pick<Step, 'tool' | 'target' | 'requiresHuman'>): boolean {
  return step.tool === undefined && step.target !== undefined && !step.requiresHuman;
}

/** The step's own limit, or the plan's whole wall-clock budget when that is shorter. */
export function effectiveTimeoutSeconds(
  step: Pick<Step, 'timeoutSeconds'>,
  budget: Pick<Plan['budget'], 'wallClockSeconds'> | undefined,
): number {
  return Math.min(step.timeoutSeconds, budget?.wallClockSeconds ?? step.timeoutSeconds);
}

/** Who runs a worker's agent step where nothing more is known: whichever worker takes its target. */
export function workerTargetText(target: string): string {
  return `the worker taking target ${target} (plangate worker --target ${target}: its --agent-command, in its --workspace)`;
}

/**
 * What an agent may reach, as the plan alone can say it: whatever the sandbox of the machine that
 * runs it allows. The host that runs it (`plangate run`) replaces it with its own sandbox's sentence.
 */
export const AGENT_REACH_UNKNOWN =
  "not known at this gate: what the sandbox of the machine that runs it allows (a worker's: its own machine's, docs/workers.md)";

/** How often a worker must show it is alive when the step has more than a minute. */
export const DEFAULT_HEARTBEAT_SECONDS = 60;

/**
 * The shortest limit an agent step can have: Step Functions wants HeartbeatSeconds (a whole
 * number, at least 1) strictly smaller than TimeoutSeconds.
 */
export const MIN_AGENT_TIMEOUT_SECONDS = 2;

/**
 * An agent step's HeartbeatSeconds for its effective timeout: a minute, or one second less than
 * the timeout when that is a minute or less, so it is always at least 1 and below the timeout.
 * Undefined below MIN_AGENT_TIMEOUT_SECONDS, where no valid heartbeat exists (validation refuses it).
 */
export function heartbeatSecondsFor(timeoutSeconds: number): number | undefined {
  if (timeoutSeconds < MIN_AGENT_TIMEOUT_SECONDS) return undefined;
  return Math.min(DEFAULT_HEARTBEAT_SECONDS, timeoutSeconds - 1);
}

/**
 * The prefix of an agent target's activity name, `<prefix>-<target>`: the platform's default
 * namePrefix, which `plangate run` uses too (lib/run/session.ts LOCAL_NAME_PREFIX).
 */
export const ACTIVITY_NAME_PREFIX = 'plangate-';

/** Step Functions' longest activity name. */
export const MAX_ACTIVITY_NAME_LENGTH = 80;

/** What an activity name may not hold: whitespace, wildcards, brackets, these marks and control characters. */
const NOT_IN_ACTIVITY_NAMES = /[\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]/u;

/**
 * Why `target` cannot name an activity (`<prefix>-<target>`), or undefined when it can.
 * The longest target leaves room for the default prefix.
 */
export function targetNameProblem(target: string): string | undefined {
  const bad = NOT_IN_ACTIVITY_NAMES.exec(target)?.[0];
  if (bad !== undefined)
    return `target "${target}" cannot name its workers' activity ("${ACTIVITY_NAME_PREFIX}<target>"): it holds ${describeCharacter(bad)}; use letters, digits, "-", "_" or "."`;
  const longest = MAX_ACTIVITY_NAME_LENGTH - ACTIVITY_NAME_PREFIX.length;
  if (target.length > longest)
    return `target is ${target.length} characters; the workers' activity "${ACTIVITY_NAME_PREFIX}<target>" allows at most ${longest}`;
  return undefined;
}

function describeCharacter(c: string): string {
  if (c === ' ') return 'a space';
  if (/\s/u.test(c) || c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f))
    return `the character U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  return `"${c}"`;
}
