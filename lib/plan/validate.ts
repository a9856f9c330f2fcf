/**
 * The validator: every check a plan must pass before it may reach a gate, reporting
 * all problems at once, each located through the parser's source map. Iterative and
 * linear so very large (or hostile) plans finish quickly.
 */

import jsonata from 'jsonata';
import {
  effectiveTimeoutSeconds,
  heartbeatSecondsFor,
  MIN_AGENT_TIMEOUT_SECONDS,
  runsOnWorker,
  targetNameProblem,
} from './agent-steps.ts';
import { awsAccessProblems } from './aws-access.ts';
import { referencePositionProblems } from './call-kind.ts';
import { functionTimeoutProblems } from './function-limits.ts';
import { dependsTransitively, findCycles, topologicalOrder } from './graph.ts';
import { suggest } from './names.ts';
import { networkProblems } from './network.ts';
import { compileOutputShapeSync, declaresJsonSchemaShape, loadJsonSchemaCompiler } from './output-shapes.ts';
import { distinctPrincipals, namesPrincipal } from './principal-names.ts';
import { hasErrors, type Problem, type Severity, sortProblems } from './problems.ts';
import { type Reference, referencesIn, referencesInValue, wholeReferencePointers } from './references.ts';
import { callRisks, contractRisks } from './risks.ts';
import type { Contract, Plan, Step } from './schema.ts';
import {
  analyzeShell,
  codeRunningEnvName,
  describeFinding,
  placeShellReferences,
  type ShellFinding,
} from './shell/index.ts';
import { locateProblems, type PendingProblem, pointerOf, type SourceMap } from './source-map.ts';
import { createToolRegistry, stepInvocation, type ToolRegistry } from './tools.ts';

export type CheckLevel = Severity | 'off';

export interface ValidateOptions {
  /** Maps problems to line:column; from `parsePlanText`/`parsePlanFile`. @default none (pointers only) */
  readonly sourceMap?: SourceMap;
  /** Names the plan in locations. @default the source map's file, else "<plan>" */
  readonly file?: string;
  /** @default the built-in tools */
  readonly tools?: ToolRegistry;
  /** @default the plan's sizePolicy.minSteps, else 3 (seed 000) */
  readonly minSteps?: number;
  /** @default the plan's sizePolicy.maxSteps, else 7 (seed 000) */
  readonly maxSteps?: number;
  /** A step with no contract. @default 'error' */
  readonly missingContract?: CheckLevel;
  /** A vague step ("improve performance") with no measurable criterion and no contract. @default 'error' */
  readonly vagueSteps?: CheckLevel;
  /**
   * Report shell commands (step args, contracts, rollbacks, postconditions) that are not valid
   * shell, per tree-sitter's bash grammar. Destructive commands are judged either way.
   * @default true
   */
  readonly checkShell?: boolean;
}

export interface ValidationResult {
  /** True when no problem is an error (warnings do not fail validation). */
  readonly valid: boolean;
  /** Every problem, ordered by position. */
  readonly problems: Problem[];
}

export const DEFAULT_MIN_STEPS = 3;
export const DEFAULT_MAX_STEPS = 7;

const VAGUE =
  /\b(?:improve|optimi[sz]e|enhance|clean(?:[ -]?up)?|tidy(?: up)?|polish|refactor|speed up|make (?:it|things|the \w+|\w+) (?:faster|better|cleaner|nicer|more \w+)|make (?:faster|better)|fix (?:stuff|things|issues|problems)|handle (?:errors|edge cases)|do (?:stuff|things))\b/i;
const MEASURABLE = /\d|[<>≤≥=%]/;
const CYCLE_NAMES_SHOWN = 12;

/** Checks a schema-valid plan. Use `parsePlanText`/`parsePlanFile` first for documents. */
export async function validatePlan(plan: Plan, options: ValidateOptions = {}): Promise<ValidationResult> {
  if (declaresJsonSchemaShape(plan)) await loadJsonSchemaCompiler();
  return validatePlanSync(plan, options);
}

/**
 * `validatePlan` for a caller that cannot await (a CDK constructor): the same checks; a plan with
 * a JSON Schema output shape needs `loadJsonSchemaCompiler()` to have resolved first.
 */
export function validatePlanSync(plan: Plan, options: ValidateOptions = {}): ValidationResult {
  const file = options.file ?? options.sourceMap?.file ?? '<plan>';
  const tools = options.tools ?? createToolRegistry();
  const pending: PendingProblem[] = [];
  const report = (severity: CheckLevel, code: string, message: string, pointer: string) => {
    if (severity !== 'off') pending.push({ severity, code, message, pointer });
  };

  const indexById = checkIds(plan, report);
  const deps = checkDependencies(plan, indexById, report);
  const cycles = findCycles(deps);
  for (const cycle of cycles) {
    report(
      'error',
      'dependency-cycle',
      `circular dependency: ${nameCycle(cycle, plan.steps)}`,
      `/steps/${cycle[0]}/dependsOn`,
    );
  }
  checkSize(plan, options, report);
  checkApprovalLadder(plan, report);

  const shellChecks: ShellCheck[] = [];
  const jsonataCache = new Map<string, string | undefined>();
  const regexCache = new Map<string, string | undefined>();
  const checkContract = (contract: Contract, pointer: string, checker: 'contract' | 'postcondition') => {
    switch (contract.kind) {
      case 'command':
        shellChecks.push({ command: contract.command, pointer: `${pointer}/command`, checker });
        checkRegex(contract.stdoutMatches, `${pointer}/stdoutMatches`, regexCache, report);
        break;
      case 'http':
        for (const reason of contractRisks(contract, tools))
          report(
            'error',
            'destructive-contract',
            `a ${checker} only checks; it must not change anything: ${reason}`,
            `${pointer}/method`,
          );
        checkUrl(contract.url, `${pointer}/url`, report);
        checkRegex(contract.bodyMatches, `${pointer}/bodyMatches`, regexCache, report);
        break;
      case 'assert': {
        if (!jsonataCache.has(contract.expression))
          jsonataCache.set(contract.expression, jsonataError(contract.expression));
        const error = jsonataCache.get(contract.expression);
        if (error)
          report(
            'error',
            'invalid-jsonata',
            `assert expression is not valid JSONata: ${error}`,
            `${pointer}/expression`,
          );
        break;
      }
      case 'lambda':
        break;
    }
  };

  const checkSyntax = options.checkShell ?? true;
  const missingContract = options.missingContract ?? 'error';
  const vagueSteps = options.vagueSteps ?? 'error';
  plan.steps.forEach((step, i) => {
    const at = `/steps/${i}`;
    checkTool(step, at, tools, report, shellChecks);
    if (runsOnWorker(step)) checkAgentStep(plan, step, at, report);
    if (step.contract) checkContract(step.contract, `${at}/contract`, 'contract');
    else
      report(
        missingContract,
        'missing-contract',
        `step "${step.id}" has no contract; only a passing contract can complete a step`,
        at,
      );
    const text = `${step.description}\n${step.task ?? ''}`;
    if (!step.contract && VAGUE.test(text) && !MEASURABLE.test(text)) {
      report(
        vagueSteps,
        'vague-step',
        `step "${step.id}" is vague ("${VAGUE.exec(text)?.[0]}") with no measurable criterion; say what done looks like, or add a contract`,
        `${at}/description`,
      );
    }
    if (step.rollback) {
      const rollbackTool = tools.get(step.rollback.tool);
      if (!rollbackTool)
        report(
          'error',
          'unknown-tool',
          `rollback uses unknown tool "${step.rollback.tool}"${tools.suggest(step.rollback.tool)}`,
          `${at}/rollback/tool`,
        );
      else
        checkArgs(
          rollbackTool.inputSchema,
          step.rollback.tool,
          step.rollback.args,
          `${at}/rollback/args`,
          report,
        );
      if (step.rollback.contract)
        checkContract(step.rollback.contract, `${at}/rollback/contract`, 'contract');
      if (step.rollback.tool === 'shell')
        checkShellEnv(step.rollback.args.env, `${at}/rollback/args/env`, report);
      // A destructive rollback is allowed (rollbacks undo things); the gate marks it.
      if (step.rollback.tool === 'shell' && typeof step.rollback.args.command === 'string')
        shellChecks.push({
          command: step.rollback.args.command,
          pointer: `${at}/rollback/args/command`,
          checker: undefined,
        });
    }
    const call = stepInvocation(step);
    // A command that does not parse is reported as such (below), not as destructive too.
    const unreadable = checkSyntax && call?.tool === 'shell' && isUnreadableShell(call.args.command);
    const reasons = call && !unreadable ? callRisks(call.tool, call.args, tools) : [];
    if (reasons.length > 0 && !step.requiresApproval) {
      report(
        'error',
        'destructive-without-approval',
        `step "${step.id}" makes a destructive ${call?.tool} call (${reasons.join('; ')}); set requiresApproval: true so it gets its own gate`,
        `${at}/requiresApproval`,
      );
    }
  });
  plan.postconditions.forEach((postcondition, i) => {
    checkContract(postcondition.contract, `/postconditions/${i}/contract`, 'postcondition');
  });
  for (const [failureClass, recipe] of Object.entries(plan.recovery)) {
    recipe?.detect.messagePatterns.forEach((pattern, j) => {
      checkRegex(pattern, `/recovery/${failureClass}/detect/messagePatterns/${j}`, regexCache, report);
    });
  }

  for (const { message, pointer } of awsAccessProblems(plan)) report('error', 'aws-access', message, pointer);
  for (const { message, pointer } of networkProblems(plan)) report('error', 'network-host', message, pointer);
  for (const { message, pointer } of functionTimeoutProblems(plan))
    report('error', 'timeout-beyond-function', message, pointer);
  checkReferences(plan, indexById, deps, cycles.length === 0, report);
  for (const { message, pointer } of referencePositionProblems(plan))
    report('error', 'reference-not-allowed', message, pointer);
  checkOutputShapes(plan, report);

  checkShellCommands(shellChecks, checkSyntax, report);

  const problems = sortProblems(locateProblems(pending, file, options.sourceMap));
  return { valid: !hasErrors(problems), problems };
}

type Report = (severity: CheckLevel, code: string, message: string, pointer: string) => void;

/** A shell command the plan holds; `checker` names what it is when it must only check. */
interface ShellCheck {
  readonly command: string;
  readonly pointer: string;
  readonly checker: 'contract' | 'postcondition' | undefined;
}

const FINDINGS_SHOWN = 3;

/** Syntax errors (with `checkSyntax`) and destructive contracts and postconditions, located in the command. */
function checkShellCommands(checks: readonly ShellCheck[], checkSyntax: boolean, report: Report): void {
  for (const { command, pointer, checker } of checks) {
    const analysis = analyzeShell(command);
    // Where a value would be read as code (or not expanded): the harness refuses to run it, so does the validator.
    if (!(checkSyntax && analysis.syntaxError))
      for (const place of placeShellReferences(command))
        if (place.refused !== undefined)
          report('error', 'unsafe-reference', `${place.raw} ${place.refused} ${inCommand(place)}`, pointer);
    if (analysis.syntaxError) {
      if (checkSyntax) {
        const { message, line, column } = analysis.syntaxError;
        report(
          'error',
          'invalid-shell',
          `not valid shell: ${message} ${inCommand({ line, column })}`,
          pointer,
        );
        continue;
      }
    }
    if (analysis.background.length > 0)
      report(
        'error',
        'background-process',
        `a plan's command must end with everything it started (on AWS its function is frozen once the command returns): ${listFindings(analysis.background)}; run it in the foreground, or \`wait\` for it before the command ends`,
        pointer,
      );
    if (checker === undefined || analysis.destructive.length === 0) continue;
    report(
      'error',
      'destructive-contract',
      `a ${checker} only checks; it must not change anything: ${listFindings(analysis.destructive)}`,
      pointer,
    );
  }
}

/**
 * A shell step's `env:` names are the plan's own: never a reference, never a name that makes bash,
 * the loader or an interpreter run code. Its values may hold references: they are data.
 */
function checkShellEnv(env: unknown, pointer: string, report: Report): void {
  if (env === null || typeof env !== 'object') return;
  for (const name of Object.keys(env)) {
    const at = `${pointer}${pointerOf([name])}`;
    if (referencesIn(name).length > 0)
      report(
        'error',
        'unsafe-env',
        `env name ${name} holds a reference; a value may only be an env value: write a fixed name (NAME: "${'${…}'}")`,
        at,
      );
    else {
      const problem = codeRunningEnvName(name);
      if (problem) report('error', 'unsafe-env', `env name ${problem}`, at);
    }
  }
}

function listFindings(findings: readonly ShellFinding[]): string {
  const shown = findings.slice(0, FINDINGS_SHOWN).map((f) => `${describeFinding(f)} ${inCommand(f)}`);
  const more = findings.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** `(at 2:5 of the command)`: a place inside a command, whose own position the source map gives. */
function inCommand({ line, column }: { line: number; column: number }): string {
  return `(at ${line}:${column} of the command)`;
}

function isUnreadableShell(command: unknown): boolean {
  return typeof command === 'string' && analyzeShell(command).syntaxError !== undefined;
}

function checkIds(plan: Plan, report: Report): Map<string, number> {
  const indexById = new Map<string, number>();
  const postconditionIds = new Set<string>();
  plan.steps.forEach((step, i) => {
    const first = indexById.get(step.id);
    if (first === undefined) indexById.set(step.id, i);
    else
      report(
        'error',
        'duplicate-id',
        `duplicate step id "${step.id}" (also step ${first + 1})`,
        `/steps/${i}/id`,
      );
  });
  plan.postconditions.forEach((pc, i) => {
    if (indexById.has(pc.id) || postconditionIds.has(pc.id))
      report(
        'error',
        'duplicate-id',
        `duplicate id "${pc.id}" (postcondition ids must differ from each other and from step ids)`,
        `/postconditions/${i}/id`,
      );
    postconditionIds.add(pc.id);
  });
  return indexById;
}

function checkDependencies(plan: Plan, indexById: Map<string, number>, report: Report): number[][] {
  const known = [...indexById.keys()];
  return plan.steps.map((step, i) => {
    const deps: number[] = [];
    step.dependsOn.forEach((dep, j) => {
      const index = indexById.get(dep);
      if (index === undefined) {
        report(
          'error',
          'unknown-dependency',
          `step "${step.id}" depends on "${dep}", which is not a step in this plan${known.length < 10_000 ? suggest(dep, known) : ''}`,
          `/steps/${i}/dependsOn/${j}`,
        );
      } else if (!deps.includes(index)) deps.push(index);
    });
    return deps;
  });
}

/** `build → test → build`; long cycles keep their first and last names. */
function nameCycle(cycle: readonly number[], steps: readonly Step[]): string {
  const names = cycle.map((i) => steps[i]!.id);
  const shown =
    names.length <= CYCLE_NAMES_SHOWN
      ? names
      : [
          ...names.slice(0, CYCLE_NAMES_SHOWN - 3),
          `… ${names.length - CYCLE_NAMES_SHOWN + 1} more …`,
          ...names.slice(-2),
        ];
  return [...shown, names[0]].join(' → ');
}

function checkSize(plan: Plan, options: ValidateOptions, report: Report) {
  const min = options.minSteps ?? plan.sizePolicy?.minSteps ?? DEFAULT_MIN_STEPS;
  const max = options.maxSteps ?? plan.sizePolicy?.maxSteps ?? DEFAULT_MAX_STEPS;
  const count = plan.steps.length;
  if (count < min || count > max) {
    report(
      'error',
      'plan-size',
      `plan has ${count} step${count === 1 ? '' : 's'}; the policy is ${min}–${max} (split or merge steps, or declare sizePolicy)`,
      '/steps',
    );
  }
}

function checkTool(step: Step, at: string, tools: ToolRegistry, report: Report, shellChecks: ShellCheck[]) {
  const call = stepInvocation(step);
  if (!call) {
    if (!step.requiresHuman)
      report(
        'error',
        'missing-tool',
        `step "${step.id}" has no tool and no target (or set requiresHuman: true)`,
        at,
      );
    return;
  }
  const tool = tools.get(call.tool);
  if (!tool) {
    report(
      'error',
      'unknown-tool',
      `step "${step.id}" uses unknown tool "${call.tool}"${tools.suggest(call.tool)}`,
      `${at}/tool`,
    );
    return;
  }
  checkArgs(tool.inputSchema, call.tool, call.args, `${at}/args`, report, (path) => {
    // The agent tool's task and agent come from seed 004's task and target fields.
    if (call.tool === 'agent' && step.args.task === undefined && path[0] === 'task') return `${at}/task`;
    if (call.tool === 'agent' && step.args.agent === undefined && path[0] === 'agent') return `${at}/target`;
    return undefined;
  });
  if (call.tool === 'shell' && typeof call.args.command === 'string')
    shellChecks.push({ command: call.args.command, pointer: `${at}/args/command`, checker: undefined });
  if (call.tool === 'shell') checkShellEnv(call.args.env, `${at}/args/env`, report);
  if (call.tool === 'http' && typeof call.args.url === 'string')
    checkUrl(call.args.url, `${at}/args/url`, report);
}

/**
 * An agent step runs on a worker through its target's activity: the target must be a valid
 * activity name, and its time must leave room for a heartbeat (found here, not at run).
 */
function checkAgentStep(plan: Plan, step: Step, at: string, report: Report) {
  const badTarget = targetNameProblem(step.target as string);
  if (badTarget) report('error', 'invalid-target', badTarget, `${at}/target`);
  const seconds = effectiveTimeoutSeconds(step, plan.budget);
  if (heartbeatSecondsFor(seconds) !== undefined) return;
  const byBudget = seconds < step.timeoutSeconds;
  report(
    'error',
    'agent-timeout-too-short',
    `step "${step.id}" runs an agent on a worker, which needs at least ${MIN_AGENT_TIMEOUT_SECONDS} s to send a heartbeat within its time; ${byBudget ? `the plan's wall-clock budget gives it ${seconds} s` : `it has timeoutSeconds: ${seconds}`}`,
    byBudget ? '/budget/wallClockSeconds' : `${at}/timeoutSeconds`,
  );
}

function checkArgs(
  schema: {
    safeParse(value: unknown): {
      success: boolean;
      error?: {
        issues: ReadonlyArray<{ path: PropertyKey[]; message: string; code: string; keys?: string[] }>;
      };
    };
  },
  toolName: string,
  args: Record<string, unknown>,
  at: string,
  report: Report,
  pointerFor: (path: PropertyKey[]) => string | undefined = () => undefined,
) {
  const result = schema.safeParse(args);
  if (result.success || !result.error) return;
  const references = wholeReferencePointers(args);
  for (const issue of result.error.issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    const relative = pointerOf(path);
    // A whole-string `${...}` reference has its type only at run time.
    if ([...references].some((r) => relative === r || relative.startsWith(`${r}/`))) continue;
    if (issue.code === 'unrecognized_keys' && issue.keys) {
      for (const key of issue.keys)
        report(
          'error',
          'invalid-args',
          `${toolName} has no argument "${key}"`,
          `${at}${pointerOf([...path, key])}`,
        );
      continue;
    }
    if (issue.code === 'invalid_type' && valueAt(args, path) === undefined) {
      report(
        'error',
        'invalid-args',
        `${toolName} is missing required argument "${path.join('.')}"`,
        pointerFor(path) ?? `${at}${relative}`,
      );
      continue;
    }
    const where = path.length > 0 ? `"${path.join('.')}": ` : '';
    report(
      'error',
      'invalid-args',
      `${toolName} args: ${where}${issue.message}`,
      pointerFor(path) ?? `${at}${relative}`,
    );
  }
}

function valueAt(value: unknown, path: ReadonlyArray<string | number>): unknown {
  let current = value;
  for (const segment of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

function checkUrl(url: string, pointer: string, report: Report) {
  if (url.startsWith('${')) return;
  // A digit fits every place a reference may be (a port too); the places it may not are refused elsewhere.
  const probe = url.replace(/\$\{[^}]*\}/g, '1');
  let parsed: URL | undefined;
  try {
    parsed = new URL(probe);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    report('error', 'invalid-url', `"${url}" is not an http(s) URL`, pointer);
}

function checkRegex(
  pattern: string | undefined,
  pointer: string,
  cache: Map<string, string | undefined>,
  report: Report,
) {
  if (pattern === undefined) return;
  if (!cache.has(pattern)) {
    try {
      new RegExp(pattern);
      cache.set(pattern, undefined);
    } catch (error) {
      cache.set(pattern, (error as Error).message);
    }
  }
  const error = cache.get(pattern);
  if (error) report('error', 'invalid-regex', `regular expression does not compile: ${error}`, pointer);
}

function jsonataError(expression: string): string | undefined {
  try {
    jsonata(expression);
    return undefined;
  } catch (error) {
    if (error instanceof RangeError) return 'expression is nested too deeply';
    const e = error as { message?: string; position?: number };
    return `${e.message ?? String(error)}${e.position === undefined ? '' : ` (at character ${e.position})`}`;
  }
}

/**
 * Every `${...}` reference must resolve: step outputs of a transitive dependency (or
 * the step itself, in its own contract) that declares that output, known context keys,
 * declared secrets. Secrets may not flow into task text or echo output, which are logged.
 */
function checkReferences(
  plan: Plan,
  indexById: Map<string, number>,
  deps: number[][],
  acyclic: boolean,
  report: Report,
) {
  const secrets = new Set(plan.secrets.map((s) => s.name));
  const contextKeys = new Set(Object.keys(plan.context));
  const upstream: Array<{ from: number; to: number; ref: Reference; pointer: string }> = [];
  const check = (ref: Reference, pointer: string, from: number | undefined, allowSelf: boolean) => {
    if (ref.malformed) {
      const shape =
        ref.namespace === 'steps'
          ? '$' + '{steps.<id>.<output>}'
          : ref.namespace === 'context'
            ? '$' + '{context.<key>}'
            : '$' + '{secrets.<name>}';
      report('error', 'bad-reference', `${ref.raw} is not a valid reference (expected ${shape})`, pointer);
      return;
    }
    if (ref.namespace === 'context') {
      if (!contextKeys.has(ref.name))
        report(
          'error',
          'unknown-context-key',
          `${ref.raw}: the plan's context has no key "${ref.name}"${suggest(ref.name, [...contextKeys])}`,
          pointer,
        );
      return;
    }
    if (ref.namespace === 'secrets') {
      if (!secrets.has(ref.name))
        report(
          'error',
          'undeclared-secret',
          `${ref.raw}: no secret "${ref.name}" is declared in the plan's secrets`,
          pointer,
        );
      return;
    }
    const target = indexById.get(ref.name);
    if (target === undefined) {
      report('error', 'unknown-reference', `${ref.raw}: there is no step "${ref.name}"`, pointer);
      return;
    }
    if (!plan.steps[target]!.outputs.includes(ref.field!)) {
      report(
        'error',
        'undeclared-output',
        `${ref.raw}: step "${ref.name}" declares no output "${ref.field}"`,
        pointer,
      );
      return;
    }
    if (from === undefined || (allowSelf && from === target)) return;
    if (from === target) {
      report(
        'error',
        'reference-not-upstream',
        `${ref.raw}: a step cannot use its own output in its arguments`,
        pointer,
      );
      return;
    }
    upstream.push({ from, to: target, ref, pointer });
  };
  const walk = (value: unknown, base: string, from: number | undefined, allowSelf: boolean) => {
    for (const ref of referencesInValue(value)) check(ref, `${base}${ref.pointer}`, from, allowSelf);
  };
  plan.steps.forEach((step, i) => {
    const at = `/steps/${i}`;
    walk(step.args, `${at}/args`, i, false);
    if (step.contract) walk(step.contract, `${at}/contract`, i, true);
    if (step.rollback) walk(step.rollback.args, `${at}/rollback/args`, i, true);
    if (step.task !== undefined) {
      for (const ref of referencesIn(step.task, `${at}/task`)) {
        if (ref.namespace === 'secrets')
          report(
            'error',
            'secret-exposed',
            `${ref.raw}: task text is shown to the people and agents who do the step, and logged; pass secrets only in tool args`,
            ref.pointer,
          );
        else check(ref, ref.pointer, i, false);
      }
    }
    if (stepInvocation(step)?.tool === 'echo') {
      for (const ref of referencesInValue(step.args))
        if (ref.namespace === 'secrets')
          report(
            'error',
            'secret-exposed',
            `${ref.raw}: echo output is recorded as evidence; never echo a secret`,
            `${at}/args${ref.pointer}`,
          );
    }
  });
  plan.postconditions.forEach((pc, i) => {
    walk(pc.contract, `/postconditions/${i}/contract`, undefined, true);
  });

  if (!acyclic || upstream.length === 0) return;
  const order = topologicalOrder(deps);
  if (!order) return;
  const answers = dependsTransitively(
    deps,
    order,
    upstream.map((u) => [u.from, u.to] as const),
  );
  upstream.forEach((u, k) => {
    if (!answers[k])
      report(
        'error',
        'reference-not-upstream',
        `${u.ref.raw}: step "${u.ref.name}" is not a dependency of step "${plan.steps[u.from]!.id}", so its output may not exist yet (add it to dependsOn)`,
        u.pointer,
      );
  });
}

/** Each output shape names a declared output and compiles (its regular expression, its JSON Schema). */
function checkOutputShapes(plan: Plan, report: Report): void {
  for (const [i, step] of plan.steps.entries()) {
    for (const [name, shape] of Object.entries(step.outputShapes ?? {})) {
      const at = `/steps/${i}/outputShapes${pointerOf([name])}`;
      if (!step.outputs.includes(name)) {
        report(
          'error',
          'invalid-output-shape',
          `step "${step.id}" declares no output "${name}" to shape${suggest(name, step.outputs)} (outputs: ${step.outputs.join(', ') || 'none'}); add it to outputs, or shape a declared one`,
          at,
        );
        continue;
      }
      const compiled = compileOutputShapeSync(shape);
      if ('problems' in compiled)
        for (const problem of compiled.problems)
          report(
            'error',
            'invalid-output-shape',
            `output "${name}": ${problem.message}`,
            shape[problem.field] === undefined ? at : `${at}/${problem.field}`,
          );
    }
  }
}

/** The timeout ladder must be climbable: a reminder before the timeout, and every group able to reach its quorum. */
function checkApprovalLadder(plan: Plan, report: Report): void {
  const { remindAfterSeconds, timeoutSeconds, escalateTo = [] } = plan.approval;
  if (remindAfterSeconds !== undefined && remindAfterSeconds >= timeoutSeconds)
    report(
      'error',
      'invalid-approval-policy',
      `approval.remindAfterSeconds (${remindAfterSeconds}) must be less than approval.timeoutSeconds (${timeoutSeconds}): the reminder comes before the timeout`,
      '/approval/remindAfterSeconds',
    );
  escalateTo.forEach((group, i) => {
    const distinct = distinctPrincipals(group.approvers).length;
    if (group.quorum > distinct)
      report(
        'error',
        'invalid-approval-policy',
        `approval.escalateTo[${i}] needs ${group.quorum} distinct approvals but names ${distinct} approver(s)`,
        `/approval/escalateTo/${i}/quorum`,
      );
    const forbidden = group.approvers.filter((a) => namesPrincipal(plan.approval.forbiddenApprovers, a));
    if (forbidden.length > 0)
      report(
        'error',
        'invalid-approval-policy',
        `approval.escalateTo[${i}] names forbidden approver(s): ${forbidden.join(', ')}`,
        `/approval/escalateTo/${i}/approvers`,
      );
  });
}
