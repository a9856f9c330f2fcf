/**
 * Output shapes (`outputShapes` on a step): what a value a step produces must look like before a
 * later step may use it. The validator compiles each shape (a located problem when it does not
 * compile); the harness checks each produced value against it (the checker, the worker, the human
 * step's answer). Reasons never contain the value: it may be a secret.
 */
import type { OutputShape, OutputShapes, Plan } from './schema.ts';

/** Why a value does not fit its shape (the value itself is not in it); undefined when it fits. */
export type ShapeCheck = (value: unknown) => string | undefined;

/** A shape that does not compile: which of its fields, and why. */
export interface ShapeProblem {
  readonly field: 'matches' | 'schema';
  readonly message: string;
}

type Compiled = { readonly check: ShapeCheck } | { readonly problems: readonly ShapeProblem[] };

const compiled = new Map<string, Compiled>();
/** A long-lived harness (plangate serve) sees many plans: the cache starts over past this. */
const MAX_COMPILED = 1000;

/** Compiles `shape` once per distinct shape; problems when its regular expression or JSON Schema is invalid. */
export async function compileOutputShape(shape: OutputShape): Promise<Compiled> {
  if (shape.schema !== undefined) await loadJsonSchemaCompiler();
  return compileOutputShapeSync(shape);
}

/**
 * `compileOutputShape` for a caller that cannot await (the validator inside a CDK constructor):
 * a JSON Schema shape needs `loadJsonSchemaCompiler()` to have resolved first.
 */
export function compileOutputShapeSync(shape: OutputShape): Compiled {
  const key = JSON.stringify(shape);
  let found = compiled.get(key);
  if (!found) {
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    found = compile(shape);
    compiled.set(key, found);
  }
  return found;
}

/** Whether any of the plan's output shapes is a JSON Schema (needs `loadJsonSchemaCompiler()`). */
export function declaresJsonSchemaShape(plan: Plan): boolean {
  return plan.steps.some((step) =>
    Object.values(step.outputShapes ?? {}).some((shape) => shape.schema !== undefined),
  );
}

/** The shape in a few words, as errors (and the gate) name it: `matches /…/`, `a JSON Schema`. */
export function describeOutputShape(shape: OutputShape): string {
  const parts: string[] = [];
  if (shape.matches !== undefined) parts.push(`matches /${shape.matches}/ (the whole value)`);
  if (shape.schema !== undefined)
    parts.push(`fits the JSON Schema ${truncated(JSON.stringify(shape.schema))}`);
  return parts.join(' and ');
}

/** The first declared output in `outputs` that does not fit its shape, and why; undefined when all fit. */
export async function outputShapeMismatch(
  outputs: Readonly<Record<string, unknown>>,
  shapes: OutputShapes | undefined,
): Promise<{ readonly output: string; readonly message: string } | undefined> {
  for (const [output, shape] of Object.entries(shapes ?? {})) {
    if (!Object.hasOwn(outputs, output)) continue;
    const result = await compileOutputShape(shape);
    const why =
      'check' in result
        ? result.check(outputs[output])
        : `its shape does not compile (${result.problems[0]?.message ?? 'invalid'})`;
    if (why !== undefined)
      return {
        output,
        message: `output "${output}" does not fit its shape: it must be a value that ${describeOutputShape(shape)}; ${why} (the value is not shown: it may be a secret)`,
      };
  }
  return undefined;
}

function compile(shape: OutputShape): Compiled {
  const problems: ShapeProblem[] = [];
  const checks: ShapeCheck[] = [];
  if (shape.matches === undefined && shape.schema === undefined)
    problems.push({
      field: 'matches',
      message: 'a shape needs `matches` (a regular expression) or `schema` (a JSON Schema), or both',
    });
  if (shape.matches !== undefined) {
    const regex = wholeValueRegex(shape.matches);
    if (typeof regex === 'string') problems.push({ field: 'matches', message: regex });
    else
      checks.push((value) =>
        typeof value !== 'string'
          ? `it is ${value === null ? 'null' : typeof value}, not a string`
          : regex.test(value)
            ? undefined
            : 'it does not match',
      );
  }
  if (shape.schema !== undefined) {
    const validator = jsonSchemaValidator(shape.schema);
    if (typeof validator === 'string') problems.push({ field: 'schema', message: validator });
    else checks.push(validator);
  }
  if (problems.length > 0) return { problems };
  return {
    check: (value) => {
      for (const check of checks) {
        const why = check(value);
        if (why !== undefined) return why;
      }
      return undefined;
    },
  };
}

/** `^(?:pattern)$`: a shape says what the whole value is, not what it contains. */
function wholeValueRegex(pattern: string): RegExp | string {
  try {
    // Checked alone first: `a)(b` is invalid, though `^(?:a)(b)$` would compile.
    new RegExp(pattern);
    return new RegExp(`^(?:${pattern})$`);
  } catch (error) {
    return `regular expression does not compile: ${(error as Error).message}`;
  }
}

type Ajv2020Instance = InstanceType<typeof import('ajv/dist/2020.js').Ajv2020>;
let ajv: Ajv2020Instance | undefined;
let loadingAjv: Promise<void> | undefined;

/** Loads Ajv once, on first need: only plans that declare a JSON Schema shape pay for it. */
export function loadJsonSchemaCompiler(): Promise<void> {
  loadingAjv ??= import('ajv/dist/2020.js').then(({ Ajv2020 }) => {
    // Unknown keywords and formats are errors (a typo would silently accept anything).
    ajv = new Ajv2020({
      strict: true,
      strictTypes: false,
      strictTuples: false,
      strictRequired: false,
      logger: false,
    });
  });
  return loadingAjv;
}

function jsonSchemaValidator(schema: Record<string, unknown> | boolean): ShapeCheck | string {
  if (!ajv)
    throw new Error('a JSON Schema output shape is compiled before loadJsonSchemaCompiler() resolved');
  let validate: ReturnType<Ajv2020Instance['compile']>;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    return `not a valid JSON Schema (2020-12): ${(error as Error).message}`;
  }
  return (value) => {
    if (validate(value)) return undefined;
    const first = validate.errors?.[0];
    return first
      ? `at "${first.instancePath || '/'}" it ${first.message ?? 'does not fit'}`
      : 'it does not fit';
  };
}

function truncated(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
