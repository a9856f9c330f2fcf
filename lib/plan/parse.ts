/**
 * One entry point for the three authoring formats. Text (or a file's bytes) becomes a
 * defaults-applied `Plan` plus a source map, or located problems: syntax errors,
 * hostile structure, and schema (zod) errors mapped to the field they concern.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { parseJson } from './json-source.ts';
import { parseMarkdownPlan } from './markdown.ts';
import { suggest } from './names.ts';
import { checkParsedStructure } from './nesting.ts';
import { hasErrors, type Problem, sortProblems } from './problems.ts';
import {
  AssertContractSchema,
  CommandContractSchema,
  HttpContractSchema,
  LambdaContractSchema,
  type Plan,
  PlanSchema,
  PostconditionSchema,
  RecoveryRecipeSchema,
  StepSchema,
} from './schema.ts';
import { locateProblems, type PendingProblem, pointerOf, type SourceMap } from './source-map.ts';
import { DEFAULT_MAX_PLAN_BYTES, decodePlanBytes } from './text-input.ts';
import { parseYaml } from './yaml-source.ts';

export type PlanFormat = 'json' | 'yaml' | 'markdown';

export interface ParseOptions {
  /** Used in locations, for the format (by extension) and for a Markdown plan's default id. @default "<plan>" */
  readonly filename?: string;
  /** @default from the extension (.json, .yaml/.yml, .md/.markdown), else sniffed from the text */
  readonly format?: PlanFormat;
  /** @default 8 MiB */
  readonly maxBytes?: number;
}

export interface ParseResult {
  /** The plan with defaults applied; undefined when any problem is an error. */
  readonly plan: Plan | undefined;
  readonly format: PlanFormat;
  /** Pass to `validatePlan` so its problems are located too. */
  readonly sourceMap: SourceMap | undefined;
  readonly problems: Problem[];
}

/** Format from a file name, else from the text's first characters. */
export function detectFormat(filename: string, text: string): PlanFormat {
  const lower = filename.toLowerCase();
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.yaml') || lower.endsWith('.yml')) return 'yaml';
  if (lower.endsWith('.md') || lower.endsWith('.markdown')) return 'markdown';
  const start = text.trimStart();
  if (start.startsWith('{')) return 'json';
  if (/^(?:---\r?\n(?:[\s\S]*?\r?\n)?---\r?\n\s*)?#\s/.test(start) || /^###\s/m.test(start))
    return 'markdown';
  return 'yaml';
}

/** Reads a plan file as bytes (so invalid UTF-8 is reported, not replaced). Rejects on I/O errors. */
export async function parsePlanFile(
  path: string,
  options: Omit<ParseOptions, 'filename'> = {},
): Promise<ParseResult> {
  const bytes = await readFile(path);
  return parsePlanBytes(bytes, { ...options, filename: path });
}

export function parsePlanBytes(bytes: Uint8Array, options: ParseOptions = {}): ParseResult {
  const file = options.filename ?? '<plan>';
  const decoded = decodePlanBytes(bytes, file, options.maxBytes ?? DEFAULT_MAX_PLAN_BYTES);
  if ('problem' in decoded)
    return {
      plan: undefined,
      format: options.format ?? detectFormat(file, ''),
      sourceMap: undefined,
      problems: [decoded.problem],
    };
  return parsePlanText(decoded.text, options);
}

export function parsePlanText(text: string, options: ParseOptions = {}): ParseResult {
  const file = options.filename ?? '<plan>';
  const format = options.format ?? detectFormat(file, text);
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_PLAN_BYTES;
  const fail = (problems: Problem[]): ParseResult => ({
    plan: undefined,
    format,
    sourceMap: undefined,
    problems,
  });
  if (text.length > maxBytes) return parsePlanBytes(new TextEncoder().encode(text), options);
  if (text.includes('\0')) return parsePlanBytes(new TextEncoder().encode(text), options);

  let value: unknown;
  let sourceMap: SourceMap;
  const problems: Problem[] = [];
  if (format === 'json') {
    const parsed = parseJson(text, file);
    if (!parsed.ok)
      return fail([
        {
          severity: 'error',
          code: parsed.error.code,
          message: parsed.error.message,
          location: { file, ...parsed.position },
        },
      ]);
    ({ value, sourceMap } = parsed);
  } else if (format === 'yaml') {
    const parsed = parseYaml(text, file);
    if (!parsed.ok)
      return fail(
        parsed.problems.map((p) => ({
          severity: 'error',
          code: p.code,
          message: p.message,
          location: { file, ...p.position },
        })),
      );
    ({ value, sourceMap } = parsed);
  } else {
    const parsed = parseMarkdownPlan(text, file);
    problems.push(...parsed.problems);
    ({ value, sourceMap } = parsed);
  }

  problems.push(...locateProblems(checkParsedStructure(value), file, sourceMap));
  if (hasErrors(problems)) return { plan: undefined, format, sourceMap, problems: sortProblems(problems) };
  const result = PlanSchema.safeParse(value);
  if (!result.success) {
    problems.push(...locateProblems(schemaProblems(result.error.issues, value), file, sourceMap));
    return { plan: undefined, format, sourceMap, problems: sortProblems(problems) };
  }
  return { plan: result.data, format, sourceMap, problems: sortProblems(problems) };
}

/** Every field name the schema knows, for "did you mean" on unknown fields. */
const KNOWN_FIELDS = [
  PlanSchema,
  StepSchema,
  PostconditionSchema,
  RecoveryRecipeSchema,
  CommandContractSchema,
  HttpContractSchema,
  AssertContractSchema,
  LambdaContractSchema,
].flatMap((schema) => Object.keys(schema.shape));

/** zod issues → pending problems at the field they concern, with messages a person can act on. */
export function schemaProblems(issues: readonly z.core.$ZodIssue[], input: unknown): PendingProblem[] {
  const problems: PendingProblem[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    const pointer = pointerOf(path);
    const name = path.length > 0 ? path.map(String).join('.') : 'plan';
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({
          severity: 'error',
          code: 'unknown-field',
          message: `${name === 'plan' ? '' : `${name}: `}unknown field "${key}"${suggest(key, KNOWN_FIELDS)}`,
          pointer: pointerOf([...path, key]),
        });
      }
      continue;
    }
    const value = valueAt(input, path);
    if (issue.code === 'invalid_union' && path[path.length - 1] !== 'kind' && isContractPath(path)) {
      const kind = (value as { kind?: unknown } | undefined)?.kind;
      problems.push({
        severity: 'error',
        code: 'invalid-field',
        message: `${name}: contract kind ${kind === undefined ? 'is missing' : `"${String(kind)}" is unknown`}; use command, http, assert or lambda`,
        pointer: kind === undefined ? pointer : `${pointer}/kind`,
      });
      continue;
    }
    if (value === undefined && issue.code === 'invalid_type') {
      problems.push({
        severity: 'error',
        code: 'missing-field',
        message: `${name}: required field is missing`,
        pointer,
      });
      continue;
    }
    const shown = typeof value === 'string' || typeof value === 'number' ? ` ${JSON.stringify(value)}` : '';
    problems.push({
      severity: 'error',
      code: 'invalid-field',
      message: `${name}${shown}: ${issue.message.replace(/^Invalid input: /, '')}`,
      pointer,
    });
  }
  return problems;
}

function isContractPath(path: ReadonlyArray<string | number>): boolean {
  return path[path.length - 1] === 'contract';
}

function valueAt(input: unknown, path: ReadonlyArray<string | number>): unknown {
  let current = input;
  for (const segment of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}
