import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvCell, csvRow, parseCsv, uncell } from '../../lib/audit/csv.ts';

/** Strings rich in what CSV and spreadsheets treat specially. */
const hostileString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc
    .array(
      fc.constantFrom(
        '=',
        '+',
        '-',
        '@',
        '\t',
        '\r',
        '\n',
        '\r\n',
        '"',
        ',',
        "'",
        ' ',
        'a',
        'ü',
        '😀',
        '\u0000',
      ),
    )
    .map((parts) => parts.join('')),
);

describe('CSV cells', () => {
  it('any rows round-trip exactly through csvRow, parseCsv and uncell', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(hostileString, { minLength: 1, maxLength: 6 }), { maxLength: 5 }),
        (rows) => {
          const text = rows.map(csvRow).join('');
          expect(parseCsv(text).map((row) => row.map(uncell))).toEqual(rows);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('no parsed cell starts with a character a spreadsheet evaluates', () => {
    fc.assert(
      fc.property(hostileString, (value) => {
        const [row] = parseCsv(csvRow([value]));
        expect(row?.[0]).not.toMatch(/^[=+\-@\t\r]/);
      }),
      { numRuns: 500 },
    );
  });

  it('leaves ordinary text alone and quotes only when it must', () => {
    expect(csvCell('GATE_APPROVED')).toBe('GATE_APPROVED');
    expect(csvCell('=1+1')).toBe("'=1+1");
    expect(csvCell("'x")).toBe("''x");
    expect(csvCell('a,"b"')).toBe('"a,""b"""');
    expect(csvCell('-1\n2')).toBe(`"'-1\n2"`);
    expect(() => parseCsv('"open')).toThrow('quoted');
  });
});
