/**
 * The Markdown parser (lib/plan/markdown.ts): it returns what the parser before issue 24's
 * restructuring returned, on a recorded corpus of examples and hostile inputs; it never throws;
 * and what the format can express survives being written in Markdown and read back.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseMarkdownPlan } from '../../lib/plan/markdown.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
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

  it('never throws on hostile input, and locates every problem inside the file', () => {
    fc.assert(
      fc.property(hostileMarkdown, markdownFileName, (text, file) => {
        const { problems } = parseMarkdownPlan(text, file);
        const lines = text.split('\n').length;
        for (const { location } of problems) {
          expect(location.file).toBe(file);
          expect(location.line).toBeGreaterThanOrEqual(1);
          expect(location.line).toBeLessThanOrEqual(lines);
          expect(location.column).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 1000 },
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
