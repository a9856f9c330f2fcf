import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyByDetection, DEFAULT_DETECTION } from '../../lib/plan/recovery.ts';
import { FAILURE_CLASSES } from '../../lib/plan/schema.ts';
import { ERROR_NAMES } from '../../lib/runtime/payloads/index.ts';
import { classifyFailure } from '../../lib/runtime/recovery/classify.ts';
import { ContractFailedError, failureFacts, TimeoutError } from '../../lib/runtime/shared/errors.ts';

/** Names and messages that no default rule mentions: lowercase-free hex-ish tokens. */
const neutralName = fc.stringMatching(/^Q[0-9]{1,6}$/);
const neutralMessage = fc.stringMatching(/^[0-9 ]{0,30}$/);
const knownClass = fc.constantFrom(...FAILURE_CLASSES.filter((c) => c !== 'unknown'));

describe('classifyFailure', () => {
  it('is total: any failure gets exactly one of the six classes', () => {
    fc.assert(
      fc.property(
        fc.record({
          name: fc.string(),
          message: fc.string(),
          httpStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: undefined }),
          exitCode: fc.option(fc.integer({ min: 0, max: 255 }), { nil: undefined }),
          code: fc.option(fc.string(), { nil: undefined }),
        }),
        (facts) => {
          expect(FAILURE_CLASSES).toContain(classifyFailure(facts).failureClass);
        },
      ),
    );
  });

  it("puts the plan's recipes before the defaults", () => {
    fc.assert(
      fc.property(
        knownClass,
        fc.integer({ min: 500, max: 504 }),
        neutralMessage,
        (failureClass, status, message) => {
          // 5xx is transient by default; a recipe claiming the status wins.
          const result = classifyFailure(
            { name: 'Error', message, httpStatus: status },
            { [failureClass]: { detect: { httpStatuses: [status] } } },
          );
          expect(result).toMatchObject({ failureClass, source: 'recipe' });
        },
      ),
    );
  });

  it('matches recipe error names, message patterns and exit codes', () => {
    const recipes = {
      transient: { detect: { messagePatterns: ['flaky disk'] } },
      logic: { detect: { exitCodes: [3] } },
      unrecoverable: { detect: { errorNames: ['QuotaGone'] } },
    };
    expect(classifyFailure({ name: 'Error', message: 'a FLAKY DISK' }, recipes).failureClass).toBe(
      'transient',
    );
    expect(classifyFailure({ name: 'ToolFailed', message: 'x', exitCode: 3 }, recipes).failureClass).toBe(
      'logic',
    );
    expect(classifyFailure({ name: 'QuotaGone', message: 'x' }, recipes).failureClass).toBe('unrecoverable');
  });

  it("classifies a worker's answers and an agent's exit: only what no rule knows stays unknown", () => {
    const of = (name: string, message = 'x', exitCode?: number) =>
      classifyFailure({ name, message, ...(exitCode !== undefined ? { exitCode } : {}) }).failureClass;
    expect(of('Worker.Stopped')).toBe('transient');
    expect(of('Worker.MissingOutput')).toBe('logic');
    // An agent's own exit: its code and message first, else its work was wrong.
    expect(of('AgentFailed', 'the build broke', 3)).toBe('logic');
    expect(of('AgentFailed', 'x', 126)).toBe('permission');
    expect(of('AgentFailed', 'x', 127)).toBe('unrecoverable');
    expect(of('AgentFailed', 'ECONNRESET while pushing', 2)).toBe('transient');
    // A shell command's unknown exit, and a handoff the worker refused, ask a person.
    expect(of('ToolFailed', 'x', 3)).toBe('unknown');
    expect(of('Worker.UnknownPlan')).toBe('unknown');
    expect(of('Worker.InvalidHandoff')).toBe('unknown');
  });

  it('classifies by default: 5xx/429/408 transient, 401/403 permission, 400/422 invalid input', () => {
    fc.assert(
      fc.property(
        neutralName,
        neutralMessage,
        fc.constantFrom(408, 429, 500, 502, 503, 504),
        (name, message, s) => {
          expect(classifyFailure({ name, message, httpStatus: s })).toMatchObject({
            failureClass: 'transient',
            source: 'default',
          });
        },
      ),
    );
    fc.assert(
      fc.property(neutralName, neutralMessage, fc.constantFrom(401, 403), (name, message, s) => {
        expect(classifyFailure({ name, message, httpStatus: s }).failureClass).toBe('permission');
      }),
    );
    fc.assert(
      fc.property(neutralName, neutralMessage, fc.constantFrom(400, 422), (name, message, s) => {
        expect(classifyFailure({ name, message, httpStatus: s }).failureClass).toBe('invalid_input');
      }),
    );
  });

  it('leaves anything no rule matches unknown (a person decides)', () => {
    const claimed = new Set(Object.values(DEFAULT_DETECTION).flatMap((d) => d.exitCodes));
    fc.assert(
      fc.property(
        neutralName,
        neutralMessage,
        fc.integer({ min: 0, max: 255 }).filter((code) => !claimed.has(code)),
        (name, message, exitCode) => {
          expect(classifyFailure({ name, message, exitCode })).toEqual({
            failureClass: 'unknown',
            source: 'none',
          });
        },
      ),
    );
  });

  it("uses lib/plan's default rules: a failure they classify gets the same class here", () => {
    fc.assert(
      fc.property(
        fc.record({
          name: fc.constantFrom(...Object.values(DEFAULT_DETECTION).flatMap((d) => d.errorNames), 'Error'),
          message: fc.constantFrom(
            'plain',
            'socket hang up',
            'permission denied',
            'no such file',
            'malformed',
          ),
          httpStatus: fc.option(fc.constantFrom(200, 400, 403, 404, 503), { nil: undefined }),
          exitCode: fc.option(fc.constantFrom(0, 1, 124, 126, 127), { nil: undefined }),
        }),
        (facts) => {
          const expected = classifyByDetection({ errorName: facts.name, ...facts });
          expect(classifyFailure(facts).failureClass).toBe(expected);
        },
      ),
    );
  });

  it('keeps the class of errors the harness already named', () => {
    for (const failureClass of FAILURE_CLASSES.filter((c) => c !== 'unknown')) {
      expect(
        classifyFailure({ name: ERROR_NAMES[failureClass], message: 'x', httpStatus: 503 }).failureClass,
      ).toBe(failureClass);
    }
    expect(classifyFailure({ name: 'Plangate.ContractFailed', message: 'timeout' }).failureClass).toBe(
      'logic',
    );
  });

  it('reads real errors: timeouts, socket codes, AWS SDK exceptions, failed contracts', () => {
    expect(classifyFailure(failureFacts(new TimeoutError('slow'))).failureClass).toBe('transient');
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(classifyFailure(failureFacts(reset))).toEqual({ failureClass: 'transient', source: 'default' });
    const denied = Object.assign(new Error('User is not allowed'), {
      name: 'AccessDeniedException',
      $metadata: { httpStatusCode: 400 },
    });
    expect(classifyFailure(failureFacts(denied)).failureClass).toBe('permission');
    expect(classifyFailure(failureFacts(new ContractFailedError('exit 1'))).failureClass).toBe('logic');
    const eacces = Object.assign(new Error('spawn EACCES'), { code: 'EACCES' });
    expect(classifyFailure(failureFacts(eacces)).failureClass).toBe('permission');
  });

  it('ignores a recipe pattern that does not compile instead of failing the run', () => {
    expect(
      classifyFailure(
        { name: 'Q1', message: '1' },
        { transient: { detect: { messagePatterns: ['(unclosed'] } } },
      ).failureClass,
    ).toBe('unknown');
  });

  it("knows the runtime's own errors: bad input and missing configuration are invalid input", () => {
    expect(classifyFailure({ name: 'InvalidInput', message: 'args.url: required' })).toEqual({
      failureClass: 'invalid_input',
      source: 'named',
    });
    expect(classifyFailure({ name: 'NotConfigured', message: 'no agent command' }).failureClass).toBe(
      'invalid_input',
    );
  });
});
