/**
 * The Markdown parser (lib/plan/markdown.ts): it returns what the parser before issue 24's
 * restructuring returned, on a recorded corpus of examples and hostile inputs.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseMarkdownPlan } from '../../lib/plan/markdown.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { parseMarkdownPlan as parseBefore } from './markdown-before.ts';
import { describeParse, hostileMarkdown, markdownFileName } from './markdown-hostile.ts';
import { markdownPlan, type Pick, writeMarkdownPlan } from './markdown-writer.ts';

/**
 * Inputs (the Markdown examples and fixtures, examples cut and spliced at random points, samples
 * of `hostileMarkdown`, and plans written by `writeMarkdownPlan`) with what the parser returned for
 * them before issue 24.
 */
const RECORDED = JSON.parse(readFileSync('tests/fixtures/markdown-corpus/recorded.json', 'utf8')) as Array<{
  file: string;
  text: string;
  expected: unknown;
}>;

describe('parseMarkdownPlan', () => {
  it('returns the recorded value, problems and positions for every input of the corpus', () => {
    expect(RECORDED.length).toBeGreaterThan(350);
    for (const { file, text, expected } of RECORDED)
      expect(describeParse(parseMarkdownPlan(text, file)), JSON.stringify(text)).toEqual(expected);
  });

  it('agrees with the parser before the restructuring on hostile inputs', () => {
    fc.assert(
      fc.property(hostileMarkdown, markdownFileName, (text, file) => {
        expect(describeParse(parseMarkdownPlan(text, file))).toEqual(describeParse(parseBefore(text, file)));
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(markdownPlan, fc.gen(), (document, generate) => {
        const text = writeMarkdownPlan(document, (options) => generate(() => fc.constantFrom(...options)));
        expect(describeParse(parseMarkdownPlan(text, 'p.md'))).toEqual(describeParse(parseBefore(text, 'p.md')));
      }),
      { numRuns: 500 },
    );
  });

  it('parses any plan it can express, written in Markdown any way the format allows, back to the same plan', () => {
    fc.assert(
      fc.property(markdownPlan, fc.gen(), (document, generate) => {
        const pick: Pick = (options) => generate(() => fc.constantFrom(...options));
        const expected = parsePlanText(JSON.stringify(document), { format: 'json' });
        expect(expected.problems).toEqual([]);
        const parsed = parsePlanText(writeMarkdownPlan(document, pick), { filename: 'generated.md' });
        expect(parsed.problems).toEqual([]);
        expect(parsed.plan).toEqual(expected.plan);
      }),
      // Shrinking a whole plan takes many minutes; the first counterexample, written out, reads well enough.
      { numRuns: 200, endOnFailure: true },
    );
  });
});
