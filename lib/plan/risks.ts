/**
 * The risks the harness computes about a plan (never taken from its author): which commands it
 * will execute change or delete things, per place a command can stand (a step's own call, its
 * contract, its rollback, a postcondition), which of its contracts and rollbacks reach outside
 * the workspace they run in, and whether each step has its own gate. The gate shows them; the
 * validator refuses what must not be (a destructive contract or postcondition, a destructive
 * step without `requiresApproval`). Shell commands are read by lib/plan/shell.
 */
import type { Contract, Plan } from './schema.ts';
import { analyzeShell, describeFinding, outsideWorkspacePath } from './shell/index.ts';
import {
  AGENT_TOOL,
  createToolRegistry,
  destructiveCallReasons,
  stepInvocation,
  type ToolRegistry,
} from './tools.ts';

/** Why something was judged destructive, e.g. "`rm -rf out` deletes recursively". Empty: harmless. */
export type RiskReasons = readonly string[];

export interface StepRisks {
  /** The step's own call (tool args, agent task excluded: an agent's actions are its contract's business). */
  readonly destructive: RiskReasons;
  readonly contract: RiskReasons;
  readonly rollback: RiskReasons;
  /** The contract that proves the rollback worked (it must only check, as every contract). */
  readonly rollbackContract: RiskReasons;
  /**
   * Where its contract, rollback or rollback contract reaches outside the workspace (an absolute
   * path, the home directory, `..`), each reason led by the place: `contract: \`cat /etc/passwd\`
   * uses /etc/passwd, outside the workspace`. Not destructive in itself; the gate marks it.
   */
  readonly outsideWorkspace: RiskReasons;
  /**
   * Why what the step's own call does cannot be known before it runs: an agent decides what it
   * runs. Treated as destructive wherever that decides an outcome (never auto-approved).
   */
  readonly effectUnknown: RiskReasons;
  /** The step has its own gate (`requiresApproval`) right before it runs. */
  readonly ownGate: boolean;
}

/** Why an agent step's effect is unknown: nothing the harness runs it in makes it read-only. */
export const AGENT_EFFECT_UNKNOWN =
  'an agent decides at run time what it runs and changes, and nothing it runs in makes it read-only';

export interface PlanRisks {
  readonly steps: Readonly<Record<string, StepRisks>>;
  readonly postconditions: Readonly<Record<string, RiskReasons>>;
}

/** Every step's and postcondition's risks. */
export function planRisks(plan: Plan, tools: ToolRegistry = createToolRegistry()): PlanRisks {
  const steps: Record<string, StepRisks> = {};
  for (const step of plan.steps) {
    const call = stepInvocation(step);
    steps[step.id] = {
      destructive: call ? callRisks(call.tool, call.args, tools) : [],
      contract: contractRisks(step.contract, tools),
      rollback: step.rollback ? callRisks(step.rollback.tool, step.rollback.args, tools) : [],
      rollbackContract: contractRisks(step.rollback?.contract, tools),
      outsideWorkspace: [
        ...contractReach(step.contract).map((reason) => `contract: ${reason}`),
        ...(step.rollback ? callReach(step.rollback.tool, step.rollback.args) : []).map(
          (reason) => `rollback: ${reason}`,
        ),
        ...contractReach(step.rollback?.contract).map((reason) => `rollback contract: ${reason}`),
      ],
      effectUnknown: call?.tool === AGENT_TOOL && !step.requiresHuman ? [AGENT_EFFECT_UNKNOWN] : [],
      ownGate: step.requiresApproval,
    };
  }
  const postconditions: Record<string, RiskReasons> = {};
  for (const postcondition of plan.postconditions)
    postconditions[postcondition.id] = contractRisks(postcondition.contract, tools);
  return { steps, postconditions };
}

/** The steps whose own call's effect is unknown (agent steps): never approved non-interactively. */
export function unknownEffectSteps(risks: PlanRisks): string[] {
  return Object.entries(risks.steps)
    .filter(([, step]) => step.effectUnknown.length > 0)
    .map(([id]) => id);
}

/** Why calling `tool` with `args` is destructive (an unknown tool: nothing is known, the validator refuses it). */
export function callRisks(tool: string, args: Record<string, unknown>, tools: ToolRegistry): RiskReasons {
  const definition = tools.get(tool);
  return definition ? destructiveCallReasons(definition, args) : [];
}

/** A command contract runs a shell command; an http contract sends a request; the others only read. */
export function contractRisks(
  contract: Contract | undefined,
  tools: ToolRegistry = createToolRegistry(),
): RiskReasons {
  if (contract?.kind === 'command') return analyzeShell(contract.command).destructive.map(describeFinding);
  if (contract?.kind === 'http')
    return callRisks('http', { method: contract.method, url: contract.url }, tools);
  return [];
}

/** Where a command contract reaches outside the workspace it runs in. */
export function contractReach(contract: Contract | undefined): RiskReasons {
  return contract?.kind === 'command'
    ? analyzeShell(contract.command).outsideWorkspace.map(describeFinding)
    : [];
}

/** Where a shell call reaches outside the workspace: its command, and a `cwd` outside it. */
export function callReach(tool: string, args: Record<string, unknown>): RiskReasons {
  if (tool !== 'shell') return [];
  const cwd = typeof args.cwd === 'string' ? outsideWorkspacePath(args.cwd) : undefined;
  return [
    ...(cwd ? [`runs in ${args.cwd}: ${cwd.replace(/^uses \S+, /, '')}`] : []),
    ...(typeof args.command === 'string'
      ? analyzeShell(args.command).outsideWorkspace.map(describeFinding)
      : []),
  ];
}

/**
 * Control characters but newline and tab: C0, DEL, C1, and the bidirectional overrides and
 * isolates, which can make text read differently from what it is. Every view shows them escaped.
 */
export const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Whether `text` holds a character of {@link CONTROL_CHARACTERS}. */
export function hasControlCharacters(text: string): boolean {
  return text.search(CONTROL_CHARACTERS) >= 0;
}

/**
 * Where a value reaches outside the workspace, were it used as a path: each of its strings (an
 * object's or array's too) that is an absolute path, a home directory or climbs above where it
 * starts, led by `label` and where in the value it sits, e.g.
 * `context.dir: uses ../../victim, above the workspace`.
 */
export function valueReach(label: string, value: unknown): RiskReasons {
  if (typeof value === 'string') {
    const reason = outsideWorkspacePath(value);
    return reason ? [`${label}: ${reason}`] : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => valueReach(`${label}[${i}]`, item));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([key, item]) => valueReach(`${label}.${key}`, item));
  return [];
}
