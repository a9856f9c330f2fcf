/**
 * Random and mutated plans through the whole front door: parse (JSON, YAML and Markdown), validate,
 * and compile what is valid. Every input must end in a plan or in located problems, within a time
 * limit: a thrown error is a crash, an input over the limit a hang. A sample also goes through the
 * Plans API, where a refused plan must leave nothing behind (no state machine, no event).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import { compilePlan } from '../../lib/compiler/index.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { hasErrors } from '../../lib/plan/problems.ts';
import { validatePlan } from '../../lib/plan/validate.ts';
import { validPlan } from '../../tests/plan/arbitraries.ts';

export interface FuzzResult {
  readonly plans: number;
  readonly valid: number;
  readonly invalid: number;
  readonly compiled: number;
  readonly crashes: number;
  readonly hangs: number;
  /** Error codes of problems that said neither a line nor a JSON pointer, with counts. */
  readonly unlocatedProblems: Record<string, number>;
  readonly slowestMs: number;
  /** Inputs slower than a second, timed again alone. */
  readonly slowRetried: { firstMs: number; againMs: number; input: string }[];
  readonly examples: string[];
}

/** Past this an input counts as a hang (a pathological input runs for ever; a busy machine does not). */
const HANG_MS = 10_000;
/** Past this an input is listed as slow and timed again alone. */
const SLOW_MS = 1_000;

/** A document mutated the way a careless editor or a hostile generator would. */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.string({ maxLength: 30, unit: 'binary' }),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.constantFrom(
      '\u0000',
      '__proto__',
      '{',
      '[',
      '"',
      ':',
      '\n- ',
      '${secrets.',
      '${steps.x.',
      '\t',
      '#',
    ),
  }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 200 }),
  }),
);

function mutate(
  text: string,
  edits: readonly fc.Arbitrary<unknown>[] | readonly Record<string, unknown>[],
): string {
  let out = text;
  for (const edit of edits as { kind: string; at: number; length?: number; text?: string }[]) {
    const at = out.length === 0 ? 0 : edit.at % out.length;
    if (edit.kind === 'delete') out = out.slice(0, at) + out.slice(at + (edit.length ?? 1));
    else if (edit.kind === 'insert') out = out.slice(0, at) + (edit.text ?? '') + out.slice(at);
    else out = out.slice(0, at) + out.slice(at, at + (edit.length ?? 1)) + out.slice(at);
  }
  return out;
}

function exampleDocuments(repo: string): { text: string; format: 'json' | 'yaml' | 'markdown' }[] {
  const docs: { text: string; format: 'json' | 'yaml' | 'markdown' }[] = [];
  for (const dir of ['examples', 'examples/scenarios']) {
    for (const file of readdirSync(join(repo, dir))) {
      const format = file.endsWith('.json')
        ? 'json'
        : file.endsWith('.md')
          ? 'markdown'
          : file.endsWith('.yaml')
            ? 'yaml'
            : undefined;
      if (format) docs.push({ text: readFileSync(join(repo, dir, file), 'utf8'), format });
    }
  }
  return docs;
}

interface FrontDoorRun {
  readonly ms: number;
  readonly valid: boolean;
  readonly compiled: boolean;
  readonly unlocated: string[];
  readonly crash?: string;
}

/** One input through parse, validate and (when valid) compile. */
async function frontDoor(input: {
  text: string;
  format: 'json' | 'yaml' | 'markdown';
}): Promise<FrontDoorRun> {
  const started = performance.now();
  try {
    const parsed = parsePlanText(input.text, { filename: 'fuzz', format: input.format });
    const problems = [...parsed.problems];
    if (parsed.plan) {
      const result = await validatePlan(parsed.plan, {
        ...(parsed.sourceMap ? { sourceMap: parsed.sourceMap } : {}),
        file: 'fuzz',
      });
      problems.push(...result.problems);
    }
    const valid = parsed.plan !== undefined && !hasErrors(problems);
    if (valid && parsed.plan) compilePlan(parsed.plan, {});
    const unlocated = problems
      .filter(
        (p) => p.severity === 'error' && p.location.pointer === undefined && p.location.line === undefined,
      )
      .map((p) => p.code);
    return { ms: performance.now() - started, valid, compiled: valid, unlocated };
  } catch (error) {
    return {
      ms: performance.now() - started,
      valid: false,
      compiled: false,
      unlocated: [],
      crash: (error as Error).message,
    };
  }
}

export async function fuzzPlans(repo: string, count: number, seed: number): Promise<FuzzResult> {
  const examples = exampleDocuments(repo);
  const inputs = fc.oneof(
    validPlan.map((plan) => ({ text: JSON.stringify(plan), format: 'json' as const })),
    validPlan.map((plan) => ({ text: toYaml(plan), format: 'yaml' as const })),
    fc
      .record({
        base: fc.constantFrom(...examples),
        edits: fc.array(mutation, { minLength: 1, maxLength: 6 }),
      })
      .map(({ base, edits }) => ({ text: mutate(base.text, edits), format: base.format })),
    fc
      .record({ plan: validPlan, edits: fc.array(mutation, { minLength: 1, maxLength: 4 }) })
      .map(({ plan, edits }) => ({ text: mutate(JSON.stringify(plan), edits), format: 'json' as const })),
    fc
      .jsonValue({ maxDepth: 4 })
      .map((value) => ({ text: JSON.stringify(value) ?? 'null', format: 'json' as const })),
    fc.string({ maxLength: 400, unit: 'binary' }).map((text) => ({ text, format: 'yaml' as const })),
  );
  const samples = fc.sample(inputs, { numRuns: count, seed });
  let valid = 0;
  let invalid = 0;
  let compiled = 0;
  let crashes = 0;
  let hangs = 0;
  const unlocated: Record<string, number> = {};
  let slowest = 0;
  const examplesSeen: string[] = [];
  const slowRetried: FuzzResult['slowRetried'] = [];
  for (const input of samples) {
    const run = await frontDoor(input);
    let ms = run.ms;
    if (ms > SLOW_MS) {
      // Over the limit once may be the machine (a collector pause, a busy core): a hang is an
      // input that is slow again on its own.
      ms = Math.min(ms, (await frontDoor(input)).ms);
      slowRetried.push({
        firstMs: Math.round(run.ms),
        againMs: Math.round(ms),
        input: JSON.stringify(input.text.slice(0, 120)),
      });
    }
    slowest = Math.max(slowest, ms);
    if (ms > HANG_MS) hangs++;
    if (run.crash !== undefined) {
      crashes++;
      if (examplesSeen.length < 5)
        examplesSeen.push(`${run.crash.slice(0, 200)} ← ${JSON.stringify(input.text.slice(0, 120))}`);
      continue;
    }
    if (run.compiled) compiled++;
    if (run.valid) valid++;
    else invalid++;
    for (const code of run.unlocated) unlocated[code] = (unlocated[code] ?? 0) + 1;
  }
  return {
    plans: samples.length,
    valid,
    invalid,
    compiled,
    crashes,
    hangs,
    unlocatedProblems: unlocated,
    slowestMs: Math.round(slowest),
    slowRetried,
    examples: examplesSeen,
  };
}
