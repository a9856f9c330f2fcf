import { describe, expect, it } from 'vitest';
// @ts-expect-error compare.mjs is plain JavaScript shared by every engine's runner
import { compareResult } from '../../fixtures/conformance/compare.mjs';
import { loadDataflowCases, runCase } from './conformance-driver.ts';

const cases = loadDataflowCases();

describe('conformance cases decided by the data-flow layer (Pass/Choice/Succeed/Fail)', () => {
  it.each(cases.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const result = await runCase(c);
    expect((compareResult as (c: unknown, r: unknown) => string[])(c, result)).toEqual([]);
  });
});
