/**
 * What an approval covers, built once from the plan: every step's exact call (the shell command
 * as text, `METHOD URL`, …), contract, rollback, recovery, and the risk marks the harness computes
 * (lib/plan/risks.ts); then the postconditions, the budget and the names of the secrets used.
 * The compiler puts it in the plan gate's summary, so what approvers see is part of the compiled
 * definition: bound to what runs by the same digest. Every channel renders this one view.
 */

import {
  AGENT_REACH_UNKNOWN,
  effectiveTimeoutSeconds,
  runsOnWorker,
  workerTargetText,
} from '../../plan/agent-steps.ts';
import { awsAccessLines } from '../../plan/aws-access.ts';
import { canonicalJson } from '../../plan/digest.ts';
import { effectiveRecovery, type RecoveryTable } from '../../plan/recovery.ts';
import { referencesInValue, stepOutputReferences } from '../../plan/references.ts';
import { type CheckMarks, type PlanRisks, planRisks, type StepRisks, valueReach } from '../../plan/risks.ts';
import { type Contract, FAILURE_CLASSES, type Plan, type Step } from '../../plan/schema.ts';
import { stepInvocation, type ToolRegistry } from '../../plan/tools.ts';
import {
  type AgentStepView,
  type ApprovalView,
  type CallDetail,
  type ContextEntry,
  hasRiskMarks,
  type RecoveryLine,
  type ShownCall,
  type StepView,
} from '../payloads/index.ts';

/**
 * Largest view, in JSON bytes: it rides in the plan gate's request, whose state payload Step
 * Functions caps at 256 KiB, beside the graph (at most 64 KiB) and the rest of the summary.
 */
export const VIEW_LIMIT_BYTES = 160 * 1024;

/** Largest view of one step compiled into its step gate (each rung of the gate's ladder carries it). */
export const STEP_GATE_VIEW_LIMIT_BYTES = 32 * 1024;

/** The whole view of `plan`, every step's call, contract and rollback included, however large. */
export function approvalView(plan: Plan, tools?: ToolRegistry): ApprovalView {
  const risks = planRisks(plan, tools);
  const recovery = effectiveRecovery(plan);
  return {
    steps: plan.steps.map((step) =>
      stepView(step, plan, risks, recovery.steps.get(step.id) ?? recovery.plan),
    ),
    postconditions: plan.postconditions.map((post) => ({
      id: post.id,
      description: post.description,
      contract: shownContract(post.contract),
      risks: [...(risks.postconditions[post.id] ?? [])],
      ...effectMarks(risks.postconditionMarks[post.id] ?? { unknown: [], exfiltration: [] }),
    })),
    ...budgetOf(plan),
    secrets: secretNames(plan),
    ...contextOf(plan),
  };
}

/**
 * Longest context value the view keeps, in characters: the view rides in the gate request beside
 * every step's call, so a context cannot crowd them out; the marks are of the whole value.
 */
export const CONTEXT_VALUE_LIMIT = 4096;

/** The plan's context as approvers see it: each key, its value as text, and its risk marks. */
function contextOf(plan: Plan): Pick<ApprovalView, 'context'> {
  const entries = Object.entries(plan.context).map(([key, value]): ContextEntry => {
    const text = typeof value === 'string' ? value : canonicalJson(value);
    const outside = valueReach(`context.${key}`, value);
    return {
      key,
      value: text.length > CONTEXT_VALUE_LIMIT ? `${text.slice(0, CONTEXT_VALUE_LIMIT - 1)}…` : text,
      ...(text.length > CONTEXT_VALUE_LIMIT ? { cut: true as const } : {}),
      ...(outside.length > 0 ? { outsideWorkspace: [...outside] } : {}),
    };
  });
  return entries.length > 0 ? { context: entries } : {};
}

/**
 * `view` within `limitBytes` of JSON. When larger, every step keeps its id, description, tool and
 * risk marks; the full calls go to as many steps as fit (risky steps first, then plan order), and
 * `truncated` says how many were shown. Should even that not fit, only the first steps are listed.
 */
export function fitApprovalView(view: ApprovalView, limitBytes = VIEW_LIMIT_BYTES): ApprovalView {
  if (bytesOf(view) <= limitBytes) return view;
  const full = view.steps;
  const frame: ApprovalView = { ...view, steps: [] };
  const total = full.length;
  // Sizes are added up per step (an array's elements are separated by one comma), with room
  // for `truncated` itself.
  let bytes = bytesOf(frame) + bytesOf({ truncated: { shown: total, listed: total, total } });
  const steps: StepView[] = [];
  for (const step of full) {
    const stub = withoutDetails(step);
    const size = bytesOf(stub) + 1;
    if (bytes + size > limitBytes) break;
    bytes += size;
    steps.push(stub);
  }
  let shown = 0;
  const risky = (step: StepView) => step.risks.ownGate || hasRiskMarks(step.risks);
  for (const pass of [risky, (step: StepView) => !risky(step)]) {
    for (let i = 0; i < steps.length; i++) {
      const step = full[i] as StepView;
      if (!pass(step)) continue;
      const grows = bytesOf(step) - bytesOf(steps[i]);
      if (bytes + grows > limitBytes) continue;
      bytes += grows;
      steps[i] = step;
      shown += 1;
    }
  }
  return { ...frame, steps, truncated: { shown, listed: steps.length, total } };
}

/**
 * The view a step gate carries of its step (compiled with it), cut to id, description, tool and
 * risks when larger than {@link STEP_GATE_VIEW_LIMIT_BYTES}.
 */
export function stepGateView(view: StepView, limitBytes = STEP_GATE_VIEW_LIMIT_BYTES): StepView {
  return bytesOf(view) <= limitBytes ? view : withoutDetails(view);
}

function stepView(step: Step, plan: Plan, risks: PlanRisks, recovery: RecoveryTable): StepView {
  const call = stepInvocation(step);
  const marks: StepRisks = risks.steps[step.id] ?? {
    destructive: [],
    contract: [],
    rollback: [],
    rollbackContract: [],
    outsideWorkspace: [],
    unknown: [],
    exfiltration: [],
    ownGate: step.requiresApproval,
  };
  const agent = call?.tool === 'agent' && !step.requiresHuman ? agentView(step, call.args, plan) : undefined;
  return {
    id: step.id,
    description: step.description,
    tool: call?.tool ?? (step.requiresHuman ? 'human' : 'none'),
    ...(call?.tool === 'agent' && typeof call.args.agent === 'string' ? { target: call.args.agent } : {}),
    ...(agent ? { agent } : {}),
    risks: {
      destructive: [...marks.destructive],
      contract: [...marks.contract],
      // The validator refuses a destructive rollback contract; shown with the rollback if present.
      rollback: [...marks.rollback, ...marks.rollbackContract],
      ...effectMarks(marks),
      ...(marks.outsideWorkspace.length > 0 ? { outsideWorkspace: [...marks.outsideWorkspace] } : {}),
      ownGate: marks.ownGate,
    },
    ...(call ? { call: shownCall(call.tool, call.args) } : {}),
    ...(step.contract ? { contract: shownContract(step.contract) } : {}),
    ...(step.rollback
      ? {
          rollback: {
            tool: step.rollback.tool,
            call: shownCall(step.rollback.tool, step.rollback.args),
            ...(step.rollback.contract ? { contract: shownContract(step.rollback.contract) } : {}),
          },
        }
      : {}),
    timeoutSeconds: step.timeoutSeconds,
    recovery: recoveryLines(recovery),
    requiresApproval: step.requiresApproval,
    requiresHuman: step.requiresHuman,
    critical: step.critical,
    outputs: [...step.outputs],
    ...(step.outputShapes && Object.keys(step.outputShapes).length > 0
      ? { outputShapes: step.outputShapes }
      : {}),
    ...(step.aws ? { aws: awsAccessLines(step.aws) } : {}),
    ...(step.network ? { network: [...step.network.hosts] } : {}),
    dependsOn: [...step.dependsOn],
  };
}

/** "Effect unknown" and exfiltration marks, each present only when not empty. */
function effectMarks(marks: CheckMarks): { unknown?: string[]; exfiltration?: string[] } {
  return {
    ...(marks.unknown.length > 0 ? { unknown: [...marks.unknown] } : {}),
    ...(marks.exfiltration.length > 0 ? { exfiltration: [...marks.exfiltration] } : {}),
  };
}

/**
 * What the plan says of an agent step's run: who runs it (the command is the step's own, else
 * the one its worker or runner is given, which the gate adds when it knows it), its time limit
 * and the budget that bounds it. Nothing here confines an agent: it runs unsandboxed.
 */
function agentView(step: Step, args: Readonly<Record<string, unknown>>, plan: Plan): AgentStepView {
  const target = typeof args.agent === 'string' ? args.agent : (step.target ?? '');
  const onWorker = runsOnWorker(step);
  const { tokens, costUsd, maxCommands } = plan.budget;
  const budget = {
    ...(tokens !== undefined ? { tokens } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(maxCommands !== undefined ? { maxCommands } : {}),
  };
  return {
    runsOn: onWorker ? 'worker' : 'runner',
    runs: onWorker
      ? workerTargetText(target)
      : `the step runner's agent tool (${typeof args.command === 'string' ? 'the command below' : '$PLANGATE_AGENT_COMMAND where the runner runs'})`,
    ...(!onWorker && typeof args.command === 'string' ? { command: args.command } : {}),
    reach: AGENT_REACH_UNKNOWN,
    timeLimitSeconds: effectiveTimeoutSeconds(step, plan.budget),
    ...(Object.keys(budget).length > 0 ? { budget } : {}),
  };
}

/** A step's view without what makes it large: what every truncated view still lists. */
function withoutDetails(view: StepView): StepView {
  const { call: _c, contract: _k, rollback: _r, recovery: _v, ...kept } = view;
  return { ...kept, detailsOmitted: true };
}

/**
 * A tool call as people read it: the tool's main argument as `text`, the others as details, and
 * any argument the tool does not define as canonical JSON (nothing the tool is given is hidden).
 */
export function shownCall(tool: string, args: Readonly<Record<string, unknown>>): ShownCall {
  const main = MAIN_ARGUMENT[tool];
  const mainValue = main ? args[main.key] : undefined;
  if (
    !main ||
    (main.form !== 'wait' && typeof mainValue !== 'string') ||
    (main.form === 'wait' && typeof mainValue !== 'number')
  )
    return withReferences({ form: 'json', text: canonicalJson(args) }, args);
  const rest = Object.entries(args).filter(([key]) => !main.uses.includes(key));
  const details: CallDetail[] = [];
  let text: string;
  switch (main.form) {
    case 'request':
      text = `${String(args.method ?? 'GET')} ${mainValue as string}`;
      break;
    case 'wait':
      text = `${mainValue as number} seconds`;
      break;
    default:
      text = mainValue as string;
  }
  for (const [key, value] of rest) details.push(detailOf(key, value));
  return withReferences({ form: main.form, text, ...(details.length > 0 ? { details } : {}) }, args);
}

/** Each built-in tool's main argument, how it reads, and the args it folds into `text`. */
const MAIN_ARGUMENT: Readonly<
  Record<string, { key: string; form: ShownCall['form']; uses: readonly string[] }>
> = {
  shell: { key: 'command', form: 'command', uses: ['command'] },
  http: { key: 'url', form: 'request', uses: ['url', 'method'] },
  lambda: { key: 'functionName', form: 'function', uses: ['functionName'] },
  // The agent target is the step view's `target`.
  agent: { key: 'task', form: 'task', uses: ['task', 'agent'] },
  wait: { key: 'seconds', form: 'wait', uses: ['seconds'] },
  echo: { key: 'message', form: 'message', uses: ['message'] },
};

/** One more argument: headers by name (their values may be credentials), text as is, the rest as JSON. */
function detailOf(key: string, value: unknown): CallDetail {
  if (key === 'headers' && value !== null && typeof value === 'object' && !Array.isArray(value))
    return { label: 'headers', value: Object.keys(value).join(', ') };
  if (key === 'env' && value !== null && typeof value === 'object' && !Array.isArray(value))
    return {
      label: 'env',
      value: Object.entries(value)
        .map(([name, v]) => `${name}=${typeof v === 'string' ? v : canonicalJson(v)}`)
        .join('\n'),
      code: true,
    };
  if (typeof value === 'string')
    return { label: key, value, ...(value.includes('\n') ? { code: true } : {}) };
  if (typeof value === 'number' || typeof value === 'boolean') return { label: key, value: String(value) };
  return { label: key, value: canonicalJson(value), code: true };
}

/** A contract as people read it: what it runs or asks, and what passes. */
export function shownContract(contract: Contract): ShownCall {
  switch (contract.kind) {
    case 'command': {
      const details: CallDetail[] = [];
      if (contract.cwd !== undefined) details.push({ label: 'cwd', value: contract.cwd });
      details.push({ label: 'timeout', value: `${contract.timeoutSeconds} s` });
      return withReferences(
        {
          form: 'command',
          text: contract.command,
          expect: `exit ${contract.expectExitCode}${contract.stdoutMatches !== undefined ? `, stdout matches /${contract.stdoutMatches}/` : ''}`,
          details,
        },
        contract,
      );
    }
    case 'http': {
      const details: CallDetail[] = [];
      if (Object.keys(contract.headers).length > 0) details.push(detailOf('headers', contract.headers));
      if (contract.body !== undefined) details.push(detailOf('body', contract.body));
      details.push({ label: 'timeout', value: `${contract.timeoutSeconds} s` });
      return withReferences(
        {
          form: 'request',
          text: `${contract.method} ${contract.url}`,
          expect: `HTTP ${contract.expectStatus}${contract.bodyMatches !== undefined ? `, body matches /${contract.bodyMatches}/` : ''}`,
          details,
        },
        contract,
      );
    }
    case 'assert':
      return withReferences({ form: 'assert', text: contract.expression, expect: 'true' }, contract);
    case 'lambda':
      return withReferences(
        {
          form: 'function',
          text: contract.functionName,
          details: [
            detailOf('payload', contract.payload),
            { label: 'timeout', value: `${contract.timeoutSeconds} s` },
          ],
        },
        contract,
      );
  }
}

/** `shown` with the `${steps.x.y}` references of `source`, each once, in the order written. */
function withReferences(shown: ShownCall, source: unknown): ShownCall {
  const references = stepOutputReferences(source);
  return references.length > 0 ? { ...shown, references } : shown;
}

/** Classes with the same retries and the same end, together, in the order of FAILURE_CLASSES. */
function recoveryLines(table: RecoveryTable): RecoveryLine[] {
  const lines: RecoveryLine[] = [];
  for (const failureClass of FAILURE_CLASSES) {
    const { maxAttempts, escalation } = table[failureClass];
    const line = lines.find((l) => l.retries === maxAttempts && l.escalation === escalation);
    if (line) line.classes.push(failureClass);
    else lines.push({ classes: [failureClass], retries: maxAttempts, escalation });
  }
  return lines;
}

function budgetOf(plan: Plan): Pick<ApprovalView, 'budget'> {
  const { wallClockSeconds, costUsd, tokens, maxCommands } = plan.budget;
  const budget = {
    ...(wallClockSeconds !== undefined ? { wallClockSeconds } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(maxCommands !== undefined ? { maxCommands } : {}),
  };
  return Object.keys(budget).length > 0 ? { budget } : {};
}

/** The secrets the plan declares and those it references (`${secrets.x}`), by name only, sorted. */
function secretNames(plan: Plan): string[] {
  const names = new Set(plan.secrets.map((s) => s.name));
  const { secrets: _declarations, ...rest } = plan;
  for (const ref of referencesInValue(rest))
    if (ref.namespace === 'secrets' && !ref.malformed) names.add(ref.name);
  return [...names].sort();
}

function bytesOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
