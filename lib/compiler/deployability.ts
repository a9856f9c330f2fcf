/**
 * Whether a valid plan can be deployed and run on Step Functions: it is compiled, and each
 * definition, each state's literal payload and each machine's history is held against AWS's hard
 * quotas (quotas.ts). What does not fit comes back as located problems, as the validator's do, so
 * `plangate validate`, `plangate compile` and the Plans API refuse the plan before anything is
 * deployed instead of failing at deploy or run time.
 */
import type { LoadedPlan } from '../plan/load.ts';
import { type Problem, sortProblems } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { locateProblems, type PendingProblem, pointerOf, type SourceMap } from '../plan/source-map.ts';
import type { AslState } from './asl.ts';
import { CompileError, type CompileOptions, type CompileResult, compilePlan } from './compile.ts';
import { STEP_FUNCTIONS_QUOTAS } from './quotas.ts';

export interface DeployabilityOptions {
  /** The file name problems carry. @default the source map's, else `<plan>` */
  readonly file?: string;
  /** Turns the problems' pointers into line:column. @default - problems carry pointers only */
  readonly sourceMap?: SourceMap;
  /** Passed to the compiler. */
  readonly compile?: CompileOptions;
}

export interface Deployability {
  /** Every quota the compiled plan breaks, located; empty when it can be deployed. */
  readonly problems: Problem[];
  /** The compiled plan; undefined when the compiler refused it. */
  readonly result?: CompileResult;
}

/**
 * Room per `${…}` placeholder for the ARN that replaces it at deploy time (ARNs are up to ~140
 * characters, placeholders ~25), so a definition that fits here still fits once filled in.
 */
const SUBSTITUTION_ROOM_BYTES = 120;

/** Compiles a validated plan and reports every Step Functions quota it would break. */
export function deployability(plan: Plan, options: DeployabilityOptions = {}): Deployability {
  const file = options.file ?? options.sourceMap?.file ?? '<plan>';
  let result: CompileResult;
  try {
    result = compilePlan(plan, options.compile);
  } catch (error) {
    if (!(error instanceof CompileError)) throw error;
    const pending = {
      severity: 'error',
      code: 'not-compilable',
      message: error.message,
      pointer: '',
    } as const;
    return { problems: locateProblems([pending], file, options.sourceMap) };
  }
  const stepIndex = new Map(plan.steps.map((step, i) => [step.id, i]));
  const pending: PendingProblem[] = [
    ...oversizedDefinitions(plan, result, stepIndex),
    ...oversizedPayloads(plan, result, stepIndex),
    ...longHistories(result),
  ];
  return { problems: locateProblems(pending, file, options.sourceMap), result };
}

/**
 * Every problem `plangate validate` reports for a loaded plan: its parse and validation problems,
 * then, when those leave it valid, what Step Functions cannot take. The CLI and the CDK constructs
 * refuse a plan on this one list.
 */
export function validationProblems(
  loaded: Pick<LoadedPlan, 'plan' | 'valid' | 'problems' | 'sourceMap'>,
  file: string,
): Problem[] {
  if (!loaded.valid || !loaded.plan) return loaded.problems;
  return sortProblems([
    ...loaded.problems,
    ...deployability(loaded.plan, { file, sourceMap: loaded.sourceMap }).problems,
  ]);
}

function oversizedDefinitions(
  plan: Plan,
  result: CompileResult,
  stepIndex: ReadonlyMap<string, number>,
): PendingProblem[] {
  const quota = STEP_FUNCTIONS_QUOTAS.definitionBytes;
  const out: PendingProblem[] = [];
  for (const definition of result.definitions) {
    const placeholders = definition.json.match(/\$\{[A-Za-z0-9_]+\}/g)?.length ?? 0;
    const bytes = Buffer.byteLength(definition.json) + placeholders * SUBSTITUTION_ROOM_BYTES;
    if (bytes <= quota) continue;
    // A step's states never split across machines: the largest step left in this one is what to shrink.
    const heaviest = result.report.perStep
      .filter((s) => s.machine === definition.name)
      .map((s) => ({ id: s.stepId, index: stepIndex.get(s.stepId) as number }))
      .map((s) => ({ ...s, bytes: jsonBytes(plan.steps[s.index]) }))
      .sort((a, b) => b.bytes - a.bytes)[0];
    out.push({
      severity: 'error',
      code: 'definition-too-large',
      message:
        `state machine definition "${definition.name}" is ${bytes} bytes (ARNs filled in) after splitting the plan into ` +
        `${result.definitions.length} definition${result.definitions.length === 1 ? '' : 's'}; Step Functions' quota is ${quota} bytes (1 MiB)` +
        (heaviest
          ? `. A step's states cannot be split across machines: step "${heaviest.id}" alone is ${heaviest.bytes} bytes of JSON; make its values smaller (pass large data by file)`
          : ''),
      pointer: heaviest ? heaviestPointer(plan.steps[heaviest.index], ['steps', heaviest.index]) : '',
    });
  }
  return out;
}

/** Fields of a state whose content Step Functions holds as one payload. */
const PAYLOAD_FIELDS = ['Arguments', 'Assign', 'Output'] as const;

function oversizedPayloads(
  plan: Plan,
  result: CompileResult,
  stepIndex: ReadonlyMap<string, number>,
): PendingProblem[] {
  const quota = STEP_FUNCTIONS_QUOTAS.payloadBytes;
  const out: PendingProblem[] = [];
  const reported = new Set<string>();
  for (const definition of result.definitions) {
    for (const [name, state] of statesOf(definition.asl.States)) {
      for (const field of PAYLOAD_FIELDS) {
        const value = state[field];
        if (value === undefined) continue;
        const text = JSON.stringify(value);
        const bytes = Buffer.byteLength(text);
        if (bytes <= quota) continue;
        // The request names its step (`"stepId":"…"`, possibly inside a JSONata string).
        const stepId = /\\*"stepId\\*"\s*:\s*\\*"([^"\\]+)\\*"/.exec(text)?.[1];
        const index = stepId === undefined ? undefined : stepIndex.get(stepId);
        const key = `${index ?? name}`;
        if (reported.has(key)) continue;
        reported.add(key);
        out.push({
          severity: 'error',
          code: 'payload-too-large',
          message:
            `state "${name}" of "${definition.name}" holds ${bytes} bytes in its ${field}` +
            `${index === undefined ? '' : ` (step "${stepId}")`}; Step Functions' quota for a state's payload is ${quota} bytes (256 KiB): make the step's values smaller (pass large data by file)`,
          pointer: index === undefined ? '' : heaviestPointer(plan.steps[index], ['steps', index]),
        });
      }
    }
  }
  return out;
}

function longHistories(result: CompileResult): PendingProblem[] {
  // The compiler's history limit: AWS's quota unless it was asked for a smaller one.
  const quota = result.report.limits.maxHistoryEvents;
  return result.report.machines
    .filter((machine) => machine.estimatedHistoryEvents > quota)
    .map((machine) => ({
      severity: 'error',
      code: 'history-too-long',
      message: `an execution of "${machine.name}" needs ~${machine.estimatedHistoryEvents} history events on its happy path; the limit is ${quota} events per execution (Step Functions' quota: ${STEP_FUNCTIONS_QUOTAS.historyEvents}): split the plan into smaller plans`,
      pointer: '/steps',
    }));
}

/** Every state of a definition, with those inside Parallel branches. */
function* statesOf(states: Readonly<Record<string, AslState>>): Generator<[string, AslState]> {
  for (const [name, state] of Object.entries(states)) {
    yield [name, state];
    if (state.Type === 'Parallel')
      for (const branch of state.Branches as { States: Record<string, AslState> }[])
        yield* statesOf(branch.States);
  }
}

/**
 * The pointer to what makes `value` large: descends while one member holds most of its bytes,
 * so a problem points at `/steps/3/args/body`, not just at the step.
 */
function heaviestPointer(value: unknown, segments: (string | number)[]): string {
  let current = value;
  const path = [...segments];
  while (typeof current === 'object' && current !== null) {
    const members = Object.entries(current).map(([key, member]) => ({
      key,
      member,
      bytes: jsonBytes(member),
    }));
    const heaviest = members.sort((a, b) => b.bytes - a.bytes)[0];
    if (!heaviest || heaviest.bytes * 2 < jsonBytes(current)) break;
    path.push(Array.isArray(current) ? Number(heaviest.key) : heaviest.key);
    current = heaviest.member;
  }
  return pointerOf(path);
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '');
}
