import { isJsonObject, type QueryLanguage } from '../types.ts';
import { type CheckContext, describe, isInteger } from './context.ts';
import { pathSyntaxError } from './paths.ts';
import { checkAssign, checkJsonataValue } from './payload.ts';
import { pointer } from './problems.ts';

const MAX_SECONDS = 99_999_999;

/** Checks `ErrorEquals` of a retrier or catcher: non-empty strings, with `States.ALL` alone. */
function checkErrorEquals(ctx: CheckContext, value: unknown, at: string): boolean {
  if (!Array.isArray(value) || value.length === 0) {
    ctx.problems.schema(pointer(at, 'ErrorEquals'), '"ErrorEquals" must be a non-empty array of error names');
    return false;
  }
  value.forEach((name, index) => {
    if (typeof name !== 'string' || name === '') {
      ctx.problems.schema(
        pointer(at, 'ErrorEquals', index),
        `An error name must be a non-empty string, not ${describe(name)}`,
      );
    }
  });
  const hasAll = value.includes('States.ALL');
  if (hasAll && value.length > 1) {
    ctx.problems.schema(pointer(at, 'ErrorEquals'), 'States.ALL must appear alone in "ErrorEquals"');
  }
  return hasAll;
}

/** Checks a `Retry` array. */
export function checkRetry(ctx: CheckContext, value: unknown, location: string): void {
  if (!Array.isArray(value)) {
    ctx.problems.schema(location, `"Retry" must be an array of retriers, not ${describe(value)}`);
    return;
  }
  value.forEach((retrier, index) => {
    const at = pointer(location, index);
    if (!isJsonObject(retrier)) {
      ctx.problems.schema(at, `A retrier must be an object, not ${describe(retrier)}`);
      return;
    }
    const allowed = [
      'ErrorEquals',
      'IntervalSeconds',
      'MaxAttempts',
      'BackoffRate',
      'MaxDelaySeconds',
      'JitterStrategy',
      'Comment',
    ];
    for (const key of Object.keys(retrier)) {
      if (!allowed.includes(key))
        ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported in a retrier`);
    }
    if (checkErrorEquals(ctx, retrier.ErrorEquals, at) && index !== value.length - 1) {
      ctx.problems.schema(pointer(at, 'ErrorEquals'), 'A retrier with States.ALL must be the last retrier');
    }
    const { IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy } = retrier;
    if (
      IntervalSeconds !== undefined &&
      !(isInteger(IntervalSeconds) && IntervalSeconds >= 1 && IntervalSeconds <= MAX_SECONDS)
    ) {
      ctx.problems.schema(
        pointer(at, 'IntervalSeconds'),
        `IntervalSeconds must be an integer from 1 to ${MAX_SECONDS}`,
      );
    }
    if (
      MaxAttempts !== undefined &&
      !(isInteger(MaxAttempts) && MaxAttempts >= 0 && MaxAttempts <= MAX_SECONDS)
    ) {
      ctx.problems.schema(
        pointer(at, 'MaxAttempts'),
        `MaxAttempts must be an integer from 0 to ${MAX_SECONDS}`,
      );
    }
    if (BackoffRate !== undefined && !(typeof BackoffRate === 'number' && BackoffRate >= 1)) {
      ctx.problems.schema(
        pointer(at, 'BackoffRate'),
        'BackoffRate must be a number greater than or equal to 1.0',
      );
    }
    if (
      MaxDelaySeconds !== undefined &&
      !(isInteger(MaxDelaySeconds) && MaxDelaySeconds >= 1 && MaxDelaySeconds < 31_622_401)
    ) {
      ctx.problems.schema(
        pointer(at, 'MaxDelaySeconds'),
        'MaxDelaySeconds must be an integer from 1 to 31622400',
      );
    }
    if (JitterStrategy !== undefined && JitterStrategy !== 'FULL' && JitterStrategy !== 'NONE') {
      ctx.problems.schema(pointer(at, 'JitterStrategy'), 'JitterStrategy must be "FULL" or "NONE"');
    }
  });
}

/** Checks a `Catch` array; returns the catchers' `Next` targets with their locations. */
export function checkCatch(
  ctx: CheckContext,
  value: unknown,
  location: string,
  language: QueryLanguage,
): { target: string; at: string }[] {
  if (!Array.isArray(value)) {
    ctx.problems.schema(location, `"Catch" must be an array of catchers, not ${describe(value)}`);
    return [];
  }
  const targets: { target: string; at: string }[] = [];
  value.forEach((catcher, index) => {
    const at = pointer(location, index);
    if (!isJsonObject(catcher)) {
      ctx.problems.schema(at, `A catcher must be an object, not ${describe(catcher)}`);
      return;
    }
    const allowed = [
      'ErrorEquals',
      'Next',
      'Comment',
      'Assign',
      language === 'JSONata' ? 'Output' : 'ResultPath',
    ];
    for (const key of Object.keys(catcher)) {
      if (!allowed.includes(key)) {
        ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported in a ${language} catcher`);
      }
    }
    if (checkErrorEquals(ctx, catcher.ErrorEquals, at) && index !== value.length - 1) {
      ctx.problems.schema(pointer(at, 'ErrorEquals'), 'A catcher with States.ALL must be the last catcher');
    }
    if (typeof catcher.Next === 'string') targets.push({ target: catcher.Next, at: pointer(at, 'Next') });
    else ctx.problems.schema(pointer(at, 'Next'), 'A catcher must have a string "Next"');
    if (catcher.ResultPath !== undefined && catcher.ResultPath !== null && language === 'JSONPath') {
      const problem =
        typeof catcher.ResultPath === 'string'
          ? pathSyntaxError(catcher.ResultPath, { reference: true, allowContextAndVariables: false })
          : `ResultPath must be a reference path or null, not ${describe(catcher.ResultPath)}`;
      if (problem) ctx.problems.schema(pointer(at, 'ResultPath'), problem);
    }
    if (catcher.Output !== undefined) checkJsonataValue(ctx, catcher.Output, pointer(at, 'Output'));
    if (catcher.Assign !== undefined)
      checkAssign(ctx, catcher.Assign, pointer(at, 'Assign'), language === 'JSONata');
  });
  return targets;
}
