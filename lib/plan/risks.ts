/**
 * The risks the harness computes about a plan (never taken from its author): every call it will
 * make sorted into read-only (proven), destructive (a known destructive form) or unknown (anything
 * else), per place a call can stand (a step's own call, its contract, its rollback, a
 * postcondition); what they send away (exfiltration); which of its contracts and rollbacks reach
 * outside the workspace they run in; and whether each step has its own gate. The gate shows them;
 * the validator refuses what must not be (a destructive contract or postcondition, a destructive
 * step without `requiresApproval`); unattended approval (`--approve`) refuses a gate that covers
 * anything not proven read-only (`unattendedApprovalRefusals`). Shell commands are read by
 * lib/plan/shell.
 */
import type { Contract, Plan } from './schema.ts';
import { analyzeShell, describeFinding, outsideWorkspacePath } from './shell/index.ts';
import {
  type CallClassification,
  classifyCall,
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
   * Why the effect of what it runs is unknown (neither proven read-only nor known destructive):
   * its own call's reasons as they are, the others led by their place (`contract: …`,
   * `rollback: …`, `rollback contract: …`). The gate marks them "effect unknown".
   */
  readonly unknown: RiskReasons;
  /** What it sends away or reads of credentials, led by place as `unknown`. */
  readonly exfiltration: RiskReasons;
  /** The step has its own gate (`requiresApproval`) right before it runs. */
  readonly ownGate: boolean;
}

/** What a postcondition's check does besides being destructive. */
export interface CheckMarks {
  readonly unknown: RiskReasons;
  readonly exfiltration: RiskReasons;
}

export interface PlanRisks {
  readonly steps: Readonly<Record<string, StepRisks>>;
  /** Why each postcondition's check is destructive (the validator refuses it). */
  readonly postconditions: Readonly<Record<string, RiskReasons>>;
  /** Each postcondition's check: why its effect is unknown, what it sends away. */
  readonly postconditionMarks: Readonly<Record<string, CheckMarks>>;
}

const READ_ONLY: CallClassification = { effect: 'read-only', destructive: [], unknown: [], exfiltration: [] };

const led = (place: string, reasons: RiskReasons): string[] => reasons.map((reason) => `${place}: ${reason}`);

/** Every step's and postcondition's risks. */
export function planRisks(plan: Plan, tools: ToolRegistry = createToolRegistry()): PlanRisks {
  const steps: Record<string, StepRisks> = {};
  for (const step of plan.steps) {
    const invocation = stepInvocation(step);
    const call = invocation ? callClassification(invocation.tool, invocation.args, tools) : READ_ONLY;
    const contract = contractClassification(step.contract, tools);
    const rollback = step.rollback
      ? callClassification(step.rollback.tool, step.rollback.args, tools)
      : READ_ONLY;
    const rollbackContract = contractClassification(step.rollback?.contract, tools);
    steps[step.id] = {
      destructive: call.destructive,
      contract: contract.destructive,
      rollback: rollback.destructive,
      rollbackContract: rollbackContract.destructive,
      outsideWorkspace: [
        ...contractReach(step.contract).map((reason) => `contract: ${reason}`),
        ...(step.rollback ? callReach(step.rollback.tool, step.rollback.args) : []).map(
          (reason) => `rollback: ${reason}`,
        ),
        ...contractReach(step.rollback?.contract).map((reason) => `rollback contract: ${reason}`),
      ],
      unknown: [
        ...call.unknown,
        ...led('contract', contract.unknown),
        ...led('rollback', rollback.unknown),
        ...led('rollback contract', rollbackContract.unknown),
      ],
      exfiltration: [
        ...call.exfiltration,
        ...led('contract', contract.exfiltration),
        ...led('rollback', rollback.exfiltration),
        ...led('rollback contract', rollbackContract.exfiltration),
      ],
      ownGate: step.requiresApproval,
    };
  }
  const postconditions: Record<string, RiskReasons> = {};
  const postconditionMarks: Record<string, CheckMarks> = {};
  for (const postcondition of plan.postconditions) {
    const check = contractClassification(postcondition.contract, tools);
    postconditions[postcondition.id] = check.destructive;
    postconditionMarks[postcondition.id] = { unknown: check.unknown, exfiltration: check.exfiltration };
  }
  return { steps, postconditions, postconditionMarks };
}

/**
 * Why `--approve` (or any unattended approval) may not answer a gate: whatever it covers that
 * is not proven read-only. The plan gate covers every step without its own gate (with its
 * contract and rollback) and every postcondition; a step's own gate covers that step. Empty:
 * everything it covers only reads, and the platform's policy decides.
 */
export function unattendedApprovalRefusals(risks: PlanRisks, stepId?: string): string[] {
  if (stepId !== undefined && !Object.hasOwn(risks.steps, stepId))
    return [`the plan has no step "${stepId}"`];
  const refusals: string[] = [];
  for (const [id, step] of Object.entries(risks.steps)) {
    if (stepId === undefined ? step.ownGate : id !== stepId) continue;
    const destructive = [
      ...step.destructive,
      ...led('contract', step.contract),
      ...led('rollback', step.rollback),
      ...led('rollback contract', step.rollbackContract),
    ];
    refusals.push(
      ...destructive.map((reason) => `step ${id} is destructive: ${reason}`),
      ...step.unknown.map((reason) => `step ${id}, effect unknown: ${reason}`),
      ...step.exfiltration.map((reason) => `step ${id}, exfiltration: ${reason}`),
    );
  }
  if (stepId !== undefined) return refusals;
  for (const [id, reasons] of Object.entries(risks.postconditions)) {
    const marks = risks.postconditionMarks[id];
    refusals.push(
      ...reasons.map((reason) => `postcondition ${id} is destructive: ${reason}`),
      ...(marks?.unknown ?? []).map((reason) => `postcondition ${id}, effect unknown: ${reason}`),
      ...(marks?.exfiltration ?? []).map((reason) => `postcondition ${id}, exfiltration: ${reason}`),
    );
  }
  return refusals;
}

/** A call sorted into its class; a tool that is not registered is unknown (the validator refuses it). */
export function callClassification(
  tool: string,
  args: Record<string, unknown>,
  tools: ToolRegistry,
): CallClassification {
  const definition = tools.get(tool);
  return definition
    ? classifyCall(definition, args)
    : {
        effect: 'unknown',
        destructive: [],
        unknown: [`the tool ${tool} is not registered`],
        exfiltration: [],
      };
}

/** A contract's check sorted into its class: a command runs, an http check sends a request, a Lambda is invoked, an assertion only reads. */
export function contractClassification(
  contract: Contract | undefined,
  tools: ToolRegistry = createToolRegistry(),
): CallClassification {
  if (contract?.kind === 'command') {
    const analysis = analyzeShell(contract.command);
    return {
      effect: analysis.effect,
      destructive: analysis.destructive.map(describeFinding),
      unknown: analysis.effect === 'unknown' ? analysis.unknown.map(describeFinding) : [],
      exfiltration: analysis.exfiltration.map(describeFinding),
    };
  }
  if (contract?.kind === 'http')
    return callClassification('http', { method: contract.method, url: contract.url }, tools);
  if (contract?.kind === 'lambda')
    return callClassification('lambda', { functionName: contract.functionName }, tools);
  return READ_ONLY;
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
