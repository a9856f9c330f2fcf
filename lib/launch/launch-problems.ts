/**
 * Every problem that keeps a plan from launching, as `plangate validate`, the CDK constructs and
 * the Plans API find them: the plan's own (lib/plan), what Step Functions cannot take (the
 * compiler's quotas) and a PLAN_CREATED too large for one journal record (the step cap a 400
 * names). One list, so a plan that validates is one the platform accepts.
 */
import { validationProblems } from '../compiler/index.ts';
import type { LoadedPlan } from '../plan/load.ts';
import { type Problem, sortProblems } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { locateProblems, type SourceMap } from '../plan/source-map.ts';
import { planRecordProblem } from './launch-plan.ts';

/** The plan's PLAN_CREATED would not fit one journal record: one problem at `/steps` of `file`, located. */
export function planRecordProblems(plan: Plan, file: string, sourceMap: SourceMap | undefined): Problem[] {
  const message = planRecordProblem(plan);
  return message === undefined ? [] : tooManySteps(message, file, sourceMap);
}

/** A refusal for the plan's size (`message` says which limit), as a problem at `/steps`. */
export function tooManySteps(message: string, file: string, sourceMap: SourceMap | undefined): Problem[] {
  return locateProblems(
    [{ severity: 'error', code: 'too-many-steps', message, pointer: '/steps' }],
    file,
    sourceMap,
  );
}

/** Validation, the compiler's quotas and the journal's record, sorted; the plan's own problems alone when it is invalid. */
export function launchProblems(
  loaded: Pick<LoadedPlan, 'plan' | 'valid' | 'problems' | 'sourceMap'>,
  file: string,
): Problem[] {
  if (!loaded.valid || !loaded.plan) return loaded.problems;
  return sortProblems([
    ...validationProblems(loaded, file),
    ...planRecordProblems(loaded.plan, file, loaded.sourceMap),
  ]);
}
