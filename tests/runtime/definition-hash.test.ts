/**
 * The hash an execution's definition is pinned by: the same for the same ASL however its keys are
 * ordered or spaced, different when any command, state or part changes, and over the parts in order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { definitionHash } from '../../lib/runtime/shared/definition-hash.ts';

const asl = (command: string) => ({
  Comment: 'one step',
  QueryLanguage: 'JSONata',
  StartAt: 'Run',
  States: {
    Run: {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke',
      Arguments: {
        FunctionName: 'arn:aws:lambda:us-east-1:123456789012:function:runner',
        Payload: { args: { command } },
      },
      End: true,
    },
  },
});

/** The same JSON with every object's keys in reverse order, spaced differently. */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reordered(v)]),
    );
  return value;
}

describe('definitionHash', () => {
  it('is sha256 over the canonical JSON: key order and spacing do not change it', () => {
    const text = JSON.stringify(asl('echo ok > approved.txt'));
    const other = JSON.stringify(reordered(asl('echo ok > approved.txt')), null, 3);
    expect(other).not.toBe(text);
    expect(definitionHash([text])).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(definitionHash([other])).toBe(definitionHash([text]));
  });

  it('changes with any command', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        fc.pre(a !== b);
        expect(definitionHash([JSON.stringify(asl(a))])).not.toBe(definitionHash([JSON.stringify(asl(b))]));
      }),
    );
  });

  it('covers every part, in order', () => {
    const main = JSON.stringify(asl('main'));
    const part = JSON.stringify(asl('part'));
    const edited = JSON.stringify(asl('part; touch edited'));
    expect(definitionHash([main, part])).not.toBe(definitionHash([main]));
    expect(definitionHash([main, part])).not.toBe(definitionHash([main, edited]));
    expect(definitionHash([main, part])).not.toBe(definitionHash([part, main]));
  });

  it('is the same for a compiled plan compiled twice, and differs when one step command changes', () => {
    const plan = (command: string) => {
      const parsed = PlanSchema.parse({
        id: 'hash-me',
        objective: 'Write a file and prove it is there',
        sizePolicy: { minSteps: 1 },
        steps: [
          {
            id: 'write',
            description: 'Write out.txt in the workspace',
            tool: 'shell',
            args: { command },
            contract: { kind: 'command', command: 'test -f out.txt' },
          },
        ],
      });
      return compilePlan(parsed).definitions.map((d) => d.json);
    };
    expect(definitionHash(plan('echo a > out.txt'))).toBe(definitionHash(plan('echo a > out.txt')));
    expect(definitionHash(plan('echo a > out.txt'))).not.toBe(definitionHash(plan('echo b > out.txt')));
  });
});
