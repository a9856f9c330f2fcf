import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_CASES } from '../../conformance-dir.ts';
import { type ConformanceCase, playCases } from '../../support/conformance.ts';

const CASES = CONFORMANCE_CASES;
/** Reached: 487 of 490; the 3 others differ only by a role ARN the recordings replaced (docs/conformance.md). */
const MIN_PASSED = 487;

describe('conformance with recorded AWS executions', () => {
  it(`passes at least ${MIN_PASSED} of the cases`, async () => {
    const { compareResult } = await import(pathToFileURL(path.join(CASES, '..', 'compare.mjs')).href);
    const cases: ConformanceCase[] = fs
      .readdirSync(CASES)
      .filter((f) => f.endsWith('.json') && !f.startsWith('_'))
      .map((f) => JSON.parse(fs.readFileSync(path.join(CASES, f), 'utf8')));
    const report = await playCases(cases, compareResult);
    expect(report.failures.map((f) => f.id)).toEqual([
      'context_object/test_input_path[$$]',
      'context_object/test_output_path[$$]',
      'outputdecl/test_base_cases[BASE_EXPR]',
    ]);
    expect(report.passed).toBeGreaterThanOrEqual(MIN_PASSED);
  });
});
