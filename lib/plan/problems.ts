/**
 * A located problem: what the parsers and the validator report. Every problem says
 * where it is (file, line and column when known, and a JSON pointer into the plan)
 * and what a person can do about it.
 */

export type Severity = 'error' | 'warning';

export interface Location {
  /** The file name as given to the parser. */
  readonly file: string;
  /** 1-based; absent when the position is unknown (e.g. a plan built in code). */
  readonly line?: number;
  /** 1-based, in UTF-16 code units like most editors. */
  readonly column?: number;
  /** RFC 6901 pointer into the plan document, e.g. `/steps/2/tool`. */
  readonly pointer?: string;
}

export interface Problem {
  readonly severity: Severity;
  /** Stable kebab-case identifier, e.g. `unknown-dependency`. */
  readonly code: string;
  readonly message: string;
  readonly location: Location;
}

/** `file:line:col error code message [/pointer]`, the CLI's one-line form. */
export function formatProblem(problem: Problem): string {
  const { file, line, column, pointer } = problem.location;
  const where = line === undefined ? file : `${file}:${line}:${column ?? 1}`;
  const suffix = pointer !== undefined && pointer !== '' ? ` [${pointer}]` : '';
  return `${where} ${problem.severity} ${problem.code} ${problem.message}${suffix}`;
}

/** Orders problems by position so output reads top to bottom; stable for equal positions. */
export function sortProblems(problems: readonly Problem[]): Problem[] {
  return problems
    .map((problem, index) => ({ problem, index }))
    .sort(
      (a, b) =>
        (a.problem.location.line ?? 0) - (b.problem.location.line ?? 0) ||
        (a.problem.location.column ?? 0) - (b.problem.location.column ?? 0) ||
        a.index - b.index,
    )
    .map(({ problem }) => problem);
}

export function hasErrors(problems: readonly Problem[]): boolean {
  return problems.some((problem) => problem.severity === 'error');
}
