/**
 * Plan text as every channel shows it to people (page, email, Slack, terminal, `plangate render`,
 * seed 003's files): each character that could hide or reorder what is read becomes a visible,
 * labelled symbol, e.g. `⟨U+202E RLO⟩`, and a long run of spaces, tabs or line breaks becomes a
 * count, e.g. `⟨3000 spaces⟩`, so no command can be made to read as something it is not. The
 * rule is unambiguous: `⟨` itself is written `⟨U+27E8⟩`, so every `⟨` shown opens a symbol and the
 * original text can be read back exactly. Also: which words of a call mix look-alike scripts.
 */
import { domainToUnicode } from 'node:url';

/**
 * What is shown as a symbol: control characters (C0 but line feed and tab, DEL, C1), format
 * characters (bidirectional controls and isolates, LRM/RLM/ALM, zero-width characters, the soft
 * hyphen, tag characters, …), line and paragraph separators, every space but U+0020 (they look
 * like one and are not), variation selectors, the combining grapheme joiner, Hangul fillers,
 * private-use, lone surrogates and unassigned code points, and `⟨` (the symbols' opener). Line
 * feeds and tabs are kept: every channel shows them (a long run of them is counted).
 */
const HIDDEN =
  /(?![\n\t ])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Co}\p{Cs}\p{Cn}\u115f\u1160\u2800\u3164\uffa0\u27e8]|\u034f|\u17b4|\u17b5|[\ufe00-\ufe0f]|[\u{e0100}-\u{e01ef}])/u;

/** A run this long of one kind of blank is shown as its count. */
const RUNS = [
  { char: ' ', min: 16, name: 'spaces' },
  { char: '\t', min: 8, name: 'tabs' },
  { char: '\n', min: 4, name: 'line breaks' },
] as const;

/** One hidden character, or one run of blanks: what {@link visibleText} replaces. */
const REPLACED = new RegExp(
  `${HIDDEN.source}|${RUNS.map((r) => `${r.char === ' ' ? ' ' : r.char === '\t' ? '\\t' : '\\n'}{${r.min},}`).join('|')}`,
  'gu',
);

/** Short names of the characters people meet (the rest are shown by code point only). */
const NAMES: Readonly<Record<number, string>> = {
  ...Object.fromEntries(
    'NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US'
      .split(' ')
      .map((name, code) => [code, name]),
  ),
  127: 'DEL',
  133: 'NEL',
  155: 'CSI',
  160: 'NBSP',
  173: 'SHY',
  847: 'CGJ',
  1564: 'ALM',
  6158: 'MVS',
  8203: 'ZWSP',
  8204: 'ZWNJ',
  8205: 'ZWJ',
  8206: 'LRM',
  8207: 'RLM',
  8232: 'LS',
  8233: 'PS',
  8234: 'LRE',
  8235: 'RLE',
  8236: 'PDF',
  8237: 'LRO',
  8238: 'RLO',
  8239: 'NNBSP',
  8288: 'WJ',
  8294: 'LRI',
  8295: 'RLI',
  8296: 'FSI',
  8297: 'PDI',
  12288: 'IDSP',
  65279: 'BOM',
  917505: 'LANGUAGE TAG',
  917631: 'CANCEL TAG',
};

/** `U+202E RLO`, `U+FE0F VS16`, `U+E0041 TAG A`, `U+E000`: what a hidden character is called. */
export function characterLabel(char: string): string {
  const code = char.codePointAt(0) as number;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const name =
    NAMES[code] ??
    (code >= 0xfe00 && code <= 0xfe0f
      ? `VS${code - 0xfe00 + 1}`
      : code >= 0xe0100 && code <= 0xe01ef
        ? `VS${code - 0xe0100 + 17}`
        : code >= 0xe0020 && code <= 0xe007e
          ? `TAG ${String.fromCodePoint(code - 0xe0000)}`
          : undefined);
  return name ? `${hex} ${name}` : hex;
}

/** `text` with each hidden character as `⟨U+… NAME⟩` and each long run of blanks as `⟨N spaces⟩`. */
export function visibleText(text: string): string {
  return text.replace(REPLACED, (match) => {
    const run = RUNS.find((r) => match.length >= r.min && match[0] === r.char);
    return run ? `⟨${match.length} ${run.name}⟩` : `⟨${characterLabel(match)}⟩`;
  });
}

/** The hidden characters of `text` (not `⟨`, which is only escaped), each label once, in order of appearance. */
export function hiddenCharacters(text: string): string[] {
  const labels = new Set<string>();
  for (const [char] of text.matchAll(new RegExp(HIDDEN.source, 'gu')))
    if (char !== '⟨') labels.add(characterLabel(char));
  return [...labels];
}

/** Scripts whose letters pass for Latin ones (`а` Cyrillic, `ο` Greek, `ո` Armenian, `Ꭺ` Cherokee). */
const LOOK_ALIKE_SCRIPTS = /[\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Cherokee}]/u;
const LATIN = /\p{Script=Latin}/u;
/** Latin letters in other clothes: fullwidth forms and mathematical alphanumerics (Common script). */
const STYLED_LATIN = /[\uff01-\uff5e\u{1d400}-\u{1d7ff}]/u;
/** A word of a command or URL: what a host or path is part of. */
const WORD = /[^\s'"`()<>;|&=,]+/gu;
/** At most this many words of one place are named. */
const MAX_LOOK_ALIKES = 5;

/**
 * The words of `text` (a command, a URL, a path) that could pass for other words: Latin mixed with
 * Cyrillic, Greek, Armenian or Cherokee letters in one part of a name (`exаmple.com`) or in a URL's
 * host (`https://аррӏе.com`), fullwidth or mathematical letters,
 * punycode names (`xn--…`, shown with what they spell). Each as "`word` why", the word as written:
 * each channel shows it through {@link visibleText}.
 */
export function lookAlikeWords(text: string): string[] {
  const found: string[] = [];
  for (const [word] of text.matchAll(WORD)) {
    const reasons: string[] = [];
    // Within one part of a name (`exаmple`), or anywhere in a URL's host (`аррӏе.com`); a path
    // such as `привет.txt` keeps its parts apart.
    const host = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]+)/i.exec(word)?.[1];
    const mixed = [...word.split(/[./@:?#=&\\]/), ...(host ? [host] : [])].find(
      (part) => LATIN.test(part) && LOOK_ALIKE_SCRIPTS.test(part),
    );
    if (mixed) reasons.push(`mixes Latin with ${scriptsOf(mixed).join(' and ')} letters`);
    if (STYLED_LATIN.test(word)) reasons.push('has fullwidth or mathematical letters');
    if (/(^|[./@])xn--/i.test(word)) reasons.push(`is a punycode name (${punycodeShown(word)})`);
    if (reasons.length > 0) found.push(`\`${word}\` ${reasons.join(', ')}`);
    if (found.length === MAX_LOOK_ALIKES) break;
  }
  return [...new Set(found)];
}

function scriptsOf(word: string): string[] {
  return (['Cyrillic', 'Greek', 'Armenian', 'Cherokee'] as const).filter((script) =>
    new RegExp(`\\p{Script=${script}}`, 'u').test(word),
  );
}

/** What a word's punycode labels spell, e.g. `xn--pple-43d.com` → "shows as аpple.com". */
function punycodeShown(word: string): string {
  const host = word.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split(/[/:?#]/)[0] ?? word;
  try {
    const shown = new URL(`http://${host}`).hostname;
    const unicode = domainToUnicode(shown);
    return unicode && unicode !== shown ? `shows as ${unicode}` : 'not a readable name';
  } catch {
    return 'not a readable name';
  }
}
