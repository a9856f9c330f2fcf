/**
 * The usual path from a file to a checked plan: parse, validate, digest. What the CLI
 * and the compiler use; problems come back located and sorted.
 */
import { planDigest } from './digest.ts';
import { type ParseOptions, type PlanFormat, parsePlanFile } from './parse.ts';
import { hasErrors, type Problem, sortProblems } from './problems.ts';
import type { Plan } from './schema.ts';
import type { SourceMap } from './source-map.ts';
import { type ValidateOptions, validatePlan } from './validate.ts';

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
export async function loadPlan(
  path: string,
  options: Omit<ValidateOptions, 'sourceMap' | 'file'> & Omit<ParseOptions, 'filename'> = {},
): Promise<LoadedPlan> {
  const parsed = await parsePlanFile(path, options);
  if (!parsed.plan)
    return {
      plan: undefined,
      format: parsed.format,
      valid: false,
      problems: parsed.problems,
      digest: undefined,
    };
  const validation = await validatePlan(parsed.plan, { ...options, sourceMap: parsed.sourceMap, file: path });
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
