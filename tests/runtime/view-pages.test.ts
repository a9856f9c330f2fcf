/**
 * The approval page's pages (lib/runtime/gate/view-pages.ts): every step on exactly one page, in
 * order, each page within its size unless one step alone is larger; and the signed list of pages
 * seen, which proves only what it says, for the gate, content and pagination it was made for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { approvalView } from '../../lib/runtime/gate/approval-view.ts';
import { SeenPages, viewPages } from '../../lib/runtime/gate/view-pages.ts';
import type { ApprovalView } from '../../lib/runtime/payloads/index.ts';

function viewOf(sizes: readonly number[]): ApprovalView {
  return approvalView(
    PlanSchema.parse({
      id: 'paged',
      version: 1,
      objective: 'Print lines',
      sizePolicy: { minSteps: 1, maxSteps: 100 },
      steps: sizes.map((size, i) => ({
        id: `s${i}`,
        description: `Print line ${i}`,
        tool: 'shell',
        args: { command: `echo ${'x'.repeat(size)}` },
      })),
    }),
  );
}

describe('viewPages', () => {
  it('puts every step on exactly one page, in order, each page within its limit unless one step is larger', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 3000 }), { minLength: 1, maxLength: 30 }), (sizes) => {
        const view = viewOf(sizes);
        const limit = 4000;
        const pages = viewPages(view, limit);
        expect(pages.flat()).toEqual(view.steps.map((_, i) => i));
        for (const page of pages) {
          expect(page.length).toBeGreaterThan(0);
          const bytes = page.reduce((n, i) => n + Buffer.byteLength(JSON.stringify(view.steps[i])), 0);
          if (page.length > 1) expect(bytes).toBeLessThanOrEqual(limit);
        }
      }),
      { numRuns: 50 },
    );
  });

  it('gives a 200 KB command a page of its own, whole', () => {
    const view = viewOf([10, 200_000, 10]);
    expect(viewPages(view)).toEqual([[0], [1], [2]]);
    expect(viewPages(viewOf([10, 10]))).toEqual([[0, 1]]);
  });
});

describe('SeenPages', () => {
  const scope = { approvalId: 'gate-1', digest: `sha256:${'a'.repeat(64)}`, pages: 3 };
  const seen = new SeenPages('k'.repeat(32));

  it('proves the pages it lists, and all of them only when it lists all', () => {
    expect([...seen.read(scope, seen.token(scope, [2, 1]))]).toEqual([1, 2]);
    expect(seen.coversAll(scope, seen.token(scope, [1, 2]))).toBe(false);
    expect(seen.coversAll(scope, seen.token(scope, [3, 1, 2, 2]))).toBe(true);
  });

  it('proves nothing forged, altered, or made for another gate, content, pagination or key', () => {
    const all = seen.token(scope, [1, 2, 3]);
    const refused = [
      '',
      '1-2-3',
      `1-2-3.${'A'.repeat(43)}`,
      all.replace(/^1-2-3/, '1-2-3-4'),
      seen.token({ ...scope, approvalId: 'gate-2' }, [1, 2, 3]),
      seen.token({ ...scope, digest: `sha256:${'b'.repeat(64)}` }, [1, 2, 3]),
      seen.token({ ...scope, pages: 4 }, [1, 2, 3]),
      new SeenPages('j'.repeat(32)).token(scope, [1, 2, 3]),
    ];
    for (const token of refused) expect(seen.coversAll(scope, token), token).toBe(false);
    expect(seen.coversAll(scope, all)).toBe(true);
  });
});
