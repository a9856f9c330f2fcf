import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shortenAtWord } from '../../lib/runtime/shared/truncate.ts';

describe('shortenAtWord', () => {
  it('keeps text that fits, and cuts longer text after a whole word with "…"', () => {
    expect(shortenAtWord('short enough', 12)).toBe('short enough');
    expect(shortenAtWord('approved by alice: ship it today', 20)).toBe('approved by alice…');
    expect(shortenAtWord('approved by alice: ship', 19)).toBe('approved by alice…');
    expect(shortenAtWord('one two three', 8)).toBe('one two…');
    // A single word longer than the room has no boundary: it is cut inside.
    expect(shortenAtWord('x'.repeat(30), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('never exceeds the limit, and what it keeps is a prefix of the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 2, max: 200 }), (text, max) => {
        const short = shortenAtWord(text, max);
        expect([...short].length).toBeLessThanOrEqual(max);
        if (short !== text) {
          expect(short.endsWith('…')).toBe(true);
          expect(text.startsWith(short.slice(0, -1))).toBe(true);
        }
      }),
    );
  });
});
