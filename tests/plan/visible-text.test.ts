/**
 * The one rule every channel shows plan text by (lib/plan/visible-text.ts): nothing that hides or
 * reorders text survives it, long blank runs are counted, and the symbols read back to exactly the
 * text they stand for, so two different commands never look the same.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  characterLabel,
  hiddenCharacters,
  lookAlikeWords,
  visibleText,
} from '../../lib/plan/visible-text.ts';

/**
 * What must never reach a reader, written out independently of the module: controls but line
 * feed and tab, format characters (bidi, zero-width, tags, soft hyphen, …), separators, spaces
 * that are not U+0020, variation selectors, private use, unassigned.
 */
const INVISIBLE =
  /(?![\n\t ])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Co}\p{Cs}\p{Cn}]|[\ufe00-\ufe0f]|[\u{e0100}-\u{e01ef}])/u;

/** Reads shown text back: each `⟨U+XXXX …⟩` as its character, each `⟨N spaces|tabs|line breaks⟩` as the run. */
function readBack(shown: string): string {
  return shown.replace(/⟨([^⟨⟩]*)⟩/g, (_, inner: string) => {
    const code = /^U\+([0-9A-F]{4,6})(?: .+)?$/.exec(inner);
    if (code) return String.fromCodePoint(Number.parseInt(code[1] as string, 16));
    const run = /^(\d+) (spaces|tabs|line breaks)$/.exec(inner);
    if (!run) throw new Error(`not a symbol: ⟨${inner}⟩`);
    const char = run[2] === 'spaces' ? ' ' : run[2] === 'tabs' ? '\t' : '\n';
    return char.repeat(Number(run[1]));
  });
}

/** Strings rich in what the rule is about: hidden characters, blank runs, `⟨` and `⟩`, any code point. */
const hostile = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 8 }),
      fc.constantFrom(
        '\u202e',
        '\u2066',
        '\u2069',
        '\u200b',
        '\u200d',
        '\u200e',
        '\u061c',
        '\u2028',
        '\u00a0',
        '\u00ad',
        '\ufe0f',
        '\u{e0041}',
        '\u001b',
        '\r',
        '\u0085',
        '⟨',
        '⟩',
        '⟨U+0041⟩',
        '\ud800',
        '\n',
        '\t',
      ),
      fc.integer({ min: 1, max: 40 }).map((n) => ' '.repeat(n)),
      fc.integer({ min: 1, max: 12 }).map((n) => '\t'.repeat(n)),
      fc.integer({ min: 1, max: 8 }).map((n) => '\n'.repeat(n)),
    ),
    { maxLength: 20 },
  )
  .map((parts) => parts.join(''));

describe('visibleText', () => {
  it('leaves no invisible, format or direction-changing character, and no long blank run', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const shown = visibleText(text);
        expect(shown).not.toMatch(INVISIBLE);
        expect(shown).not.toMatch(/ {16}|\t{8}|\n{4}/);
      }),
      { numRuns: 3000 },
    );
  });

  it('is unambiguous: the symbols read back to exactly the text, so two texts never show alike', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(readBack(visibleText(text))).toBe(text);
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(hostile, hostile, (a, b) => {
        fc.pre(a !== b);
        expect(visibleText(a)).not.toBe(visibleText(b));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps ordinary text, line feeds and tabs as they are', () => {
    const plain = 'mkdir -p out && printf "a\\tb\\n" > out/x\n\tcat out/x  # two  spaces';
    expect(visibleText(plain)).toBe(plain);
    expect(visibleText('Zürich 東京 Ωμέγα')).toBe('Zürich 東京 Ωμέγα');
  });

  it('names the characters people meet', () => {
    expect(
      visibleText("echo '\u2067Cleaning up; \u2066taskset -c 0 rm -rf ../x #\u2069\u2069'\u001b[2K\r"),
    ).toBe(
      "echo '⟨U+2067 RLI⟩Cleaning up; ⟨U+2066 LRI⟩taskset -c 0 rm -rf ../x #⟨U+2069 PDI⟩⟨U+2069 PDI⟩'⟨U+001B ESC⟩[2K⟨U+000D CR⟩",
    );
    expect(visibleText('a\u200bb\u200dc\u200ed\u200fe\u061cf\u2028g\u2029h\u00a0i\u00adj\ufeff')).toBe(
      'a⟨U+200B ZWSP⟩b⟨U+200D ZWJ⟩c⟨U+200E LRM⟩d⟨U+200F RLM⟩e⟨U+061C ALM⟩f⟨U+2028 LS⟩g⟨U+2029 PS⟩h⟨U+00A0 NBSP⟩i⟨U+00AD SHY⟩j⟨U+FEFF BOM⟩',
    );
    expect(characterLabel('\ufe0f')).toBe('U+FE0F VS16');
    expect(characterLabel('\u{e0100}')).toBe('U+E0100 VS17');
    expect(characterLabel('\u{e0041}')).toBe('U+E0041 TAG A');
    expect(characterLabel('\u007f')).toBe('U+007F DEL');
    expect(characterLabel('\u009b')).toBe('U+009B CSI');
    expect(characterLabel('\ue000')).toBe('U+E000');
  });

  it('counts a long run of spaces, so nothing hides behind it', () => {
    const command = `echo ok${' '.repeat(3000)}; python3 -c "import shutil; shutil.rmtree('../x')"`;
    expect(visibleText(command)).toBe(
      `echo ok⟨3000 spaces⟩; python3 -c "import shutil; shutil.rmtree('../x')"`,
    );
    expect(visibleText(`a${'\n'.repeat(500)}rm -rf x`)).toBe('a⟨500 line breaks⟩rm -rf x');
    expect(visibleText(' '.repeat(15))).toBe(' '.repeat(15));
  });
});

describe('hiddenCharacters', () => {
  it('lists each hidden character once, in order, and not the escaped ⟨', () => {
    expect(hiddenCharacters('a\u202eb\u202e\u200b⟨c')).toEqual(['U+202E RLO', 'U+200B ZWSP']);
    expect(hiddenCharacters('plain text\nwith\ttabs')).toEqual([]);
  });

  it('finds something exactly when the rule changes a character (blank runs aside)', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const withoutRuns = text.replace(/⟨/g, '');
        expect(hiddenCharacters(withoutRuns).length > 0).toBe(INVISIBLE.test(withoutRuns));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('lookAlikeWords', () => {
  it('marks hosts and paths that mix Latin with Cyrillic or Greek letters, styled letters and punycode', () => {
    expect(lookAlikeWords('curl -fsS https://ex\u0430mple.com/install.sh -o i.sh')).toEqual([
      '`https://ex\u0430mple.com/install.sh` mixes Latin with Cyrillic letters',
    ]);
    expect(lookAlikeWords('cat /etc/pass\u03bfwd')).toEqual([
      '`/etc/pass\u03bfwd` mixes Latin with Greek letters',
    ]);
    expect(lookAlikeWords('curl https://\u0430\u0440\u0440\u04cf\u0435.com/')).toEqual([
      '`https://\u0430\u0440\u0440\u04cf\u0435.com/` mixes Latin with Cyrillic letters',
    ]);
    expect(lookAlikeWords('curl https://xn--pple-43d.com/x')).toEqual([
      '`https://xn--pple-43d.com/x` is a punycode name (shows as \u0430pple.com)',
    ]);
    expect(lookAlikeWords('open ｅｘａｍｐｌｅ.com')).toEqual([
      '`ｅｘａｍｐｌｅ.com` has fullwidth or mathematical letters',
    ]);
  });

  it('leaves plain ASCII commands and single-script words alone', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }),
        (text) => {
          fc.pre(!/xn--/i.test(text));
          expect(lookAlikeWords(text)).toEqual([]);
        },
      ),
    );
    expect(lookAlikeWords('echo Привет > out/привет.txt; curl https://пример.рф/')).toEqual([]);
  });
});
