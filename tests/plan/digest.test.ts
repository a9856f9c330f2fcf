import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, planDigest } from '../../lib/plan/digest.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { validPlan } from './arbitraries.ts';

/** The same value with every object's keys inserted in reverse order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .reverse()
      .map((k) => [k, reverseKeys((value as Record<string, unknown>)[k])]),
  );
}

describe('planDigest', () => {
  it('is SHA-256 hex of canonical JSON, independent of key order and of defaults being spelled out', () => {
    fc.assert(
      fc.property(validPlan, (document) => {
        const digest = planDigest(document as never);
        expect(digest).toMatch(/^[0-9a-f]{64}$/);
        expect(planDigest(PlanSchema.parse(document))).toBe(digest);
        expect(planDigest(reverseKeys(document) as never)).toBe(digest);
      }),
      { numRuns: 100 },
    );
  });

  it('ignores only the lifecycle status', () => {
    fc.assert(
      fc.property(validPlan, fc.constantFrom('draft', 'verified', 'approved', 'done'), (document, status) => {
        expect(planDigest({ ...document, status } as never)).toBe(planDigest(document as never));
      }),
      { numRuns: 50 },
    );
  });

  it('changes with any semantic change', () => {
    const edits: Array<
      (d: Record<string, unknown> & { steps: Array<Record<string, unknown>> }, k: number) => void
    > = [
      (d) => {
        d.version = (d.version as number) + 1;
      },
      (d) => {
        d.objective = `${d.objective}!`;
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.description = 'changed';
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.requiresApproval = true;
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.critical = false;
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.timeoutSeconds = 901;
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.outputs = ['extra'];
      },
      (d, k) => {
        d.steps[k % d.steps.length]!.contract = { kind: 'command', command: 'false' };
      },
      (d) => {
        d.context = { ...(d.context as object), added: 1 };
      },
      (d) => {
        d.budget = { costUsd: 1 };
      },
      (d) => {
        d.approval = { quorum: 2 };
      },
      (d) => {
        d.recovery = { transient: { maxAttempts: 5 } };
      },
      (d) => {
        d.postconditions = [{ id: 'pc', description: 'x', contract: { kind: 'assert', expression: 'true' } }];
      },
      (d) => {
        d.steps.reverse();
      },
    ];
    fc.assert(
      fc.property(validPlan, fc.nat(edits.length - 1), fc.nat(), (document, e, k) => {
        const edited = structuredClone(document) as unknown as Parameters<(typeof edits)[number]>[0];
        edits[e]!(edited, k);
        fc.pre(JSON.stringify(edited) !== JSON.stringify(document));
        expect(planDigest(edited as never)).not.toBe(planDigest(document as never));
      }),
      { numRuns: 300 },
    );
  });

  it('canonical JSON sorts keys, drops undefined and handles deep values without recursion', () => {
    expect(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: -0 }], e: 'é' })).toBe(
      '{"a":[null,{"c":0}],"b":1,"e":"é"}',
    );
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(canonicalJson(deep)).toHaveLength(200_001);
  });
});
