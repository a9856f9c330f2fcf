/**
 * The usual path from a file to a checked plan: parse, validate, digest. What the CLI
 * and the compiler use; problems come back located and sorted.
 */
import { readFileSync } from 'node:fs';
import { planDigest } from './digest.ts';
import { declaresJsonSchemaShape, loadJsonSchemaCompiler } from './output-shapes.ts';
import {
  type ParseOptions,
  type ParseResult,
  type PlanFormat,
  parsePlanBytes,
  parsePlanFile,
} from './parse.ts';
import { hasErrors, type Problem, sortProblems } from './problems.ts';
import type { Plan } from './schema.ts';
import type { SourceMap } from './source-map.ts';
import { type ValidateOptions, validatePlanSync } from './validate.ts';

export interface LoadedPlan {
  /** The parsed plan (defaults applied), even when validation found problems; undefined if it did not parse. */
  readonly plan: Plan | undefined;
  readonly format: PlanFormat;
  /** True when neither parsing nor validation found an error. */
  readonly valid: boolean;
  readonly problems: Problem[];
  /** SHA-256 hex of the plan (see `planDigest`); undefined when it did not parse. */
  readonly digest: string | undefined;
  /** Where the plan's parts are in the file, for locating later checks (the compiler's quotas). */
  readonly sourceMap?: SourceMap;
}

/** Parses and validates a plan file. Rejects only on I/O errors (missing file, unreadable). */
export async function loadPlan(path: string, options: LoadOptions = {}): Promise<LoadedPlan> {
  const parsed = await parsePlanFile(path, options);
  if (parsed.plan && declaresJsonSchemaShape(parsed.plan)) await loadJsonSchemaCompiler();
  return checkParsed(path, parsed, options);
}

/**
 * `loadPlan` for a caller that cannot await (a CDK constructor): the same checks; a plan with a
 * JSON Schema output shape needs `loadJsonSchemaCompiler()` to have resolved first. Throws only
 * on I/O errors.
 */
export function loadPlanSync(path: string, options: LoadOptions = {}): LoadedPlan {
  return checkParsed(path, parsePlanBytes(readFileSync(path), { ...options, filename: path }), options);
}

type LoadOptions = Omit<ValidateOptions, 'sourceMap' | 'file'> & Omit<ParseOptions, 'filename'>;

function checkParsed(path: string, parsed: ParseResult, options: LoadOptions): LoadedPlan {
  if (!parsed.plan)
    return {
      plan: undefined,
      format: parsed.format,
      valid: false,
      problems: parsed.problems,
      digest: undefined,
    };
  const validation = validatePlanSync(parsed.plan, { ...options, sourceMap: parsed.sourceMap, file: path });
  const problems = sortProblems([...parsed.problems, ...validation.problems]);
  return {
    plan: parsed.plan,
    format: parsed.format,
    valid: !hasErrors(problems),
    problems,
    digest: planDigest(parsed.plan),
    sourceMap: parsed.sourceMap,
  };
}
