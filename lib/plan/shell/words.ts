/**
 * Shell words as the shell sees them after quote removal: `"rm"`, `'rm'`, `\rm`, `r''m` and
 * `$'rm'` are all the word `rm`. A word with an expansion (`$X`, `${X}`, `$(…)`, `` `…` ``,
 * `$((…))`) is known only at run time; its `text` keeps those parts as written, which is what a
 * nested shell (`bash -c "…"`) reads after the outer shell filled them.
 */
import type { Node } from 'web-tree-sitter';

/** A 0-based place in the text one parse read. */
export interface Place {
  readonly row: number;
  readonly column: number;
}

export interface ShellWord {
  /** The word after quote removal; undefined when part of it is only known at run time. */
  readonly value: string | undefined;
  /** The value with run-time parts as written: what a nested shell reads. */
  readonly text: string;
  /** Unquoted glob or brace characters: the shell may turn the word into other words. */
  readonly pattern: boolean;
  /** The word as written. */
  readonly raw: string;
  /** Where the word starts. */
  readonly at: Place;
  /** Where `text` starts when it is a verbatim slice of the parsed text (no quote or escape removed inside). */
  readonly textAt: Place | undefined;
  /** The offset of that slice in the parsed text, with `textAt`. */
  readonly textIndex: number | undefined;
}

interface Parts {
  value: string | undefined;
  text: string;
  /** Unquoted characters, escapes removed, for glob and brace detection. */
  unquoted: string;
  brace: boolean;
}

/**
 * The word a syntax node stands for. `source` is the text that was parsed; `shown` the same text
 * as written (of the same length: plan references are masked in `source` only).
 */
export function wordOf(node: Node, source: string, shown = source): ShellWord {
  const parts = partsOf(node, source);
  const raw = shown.slice(node.startIndex, node.endIndex);
  const at = { row: node.startPosition.row, column: node.startPosition.column };
  let textAt: Place | undefined;
  let textIndex: number | undefined;
  const parsed = source.slice(node.startIndex, node.endIndex);
  if (parts.text === parsed) {
    textAt = at;
    textIndex = node.startIndex;
  } else if ((node.type === 'raw_string' || node.type === 'string') && parts.text === parsed.slice(1, -1)) {
    textAt = { row: at.row, column: at.column + 1 };
    textIndex = node.startIndex + 1;
  }
  return {
    value: parts.value,
    text: parts.text,
    pattern: parts.brace || /[*?[]/.test(parts.unquoted) || /\{[^}]*(?:,|\.\.)[^}]*\}/.test(parts.unquoted),
    raw,
    at,
    textAt,
    textIndex,
  };
}

/** A word made from plain text (a value a wrapper or another command produced), placed at `at`. */
export function literalWord(value: string, at: Place): ShellWord {
  return { value, text: value, pattern: false, raw: value, at, textAt: undefined, textIndex: undefined };
}

function partsOf(node: Node, source: string): Parts {
  const raw = source.slice(node.startIndex, node.endIndex);
  if (!node.isNamed) return { value: raw, text: raw, unquoted: raw, brace: false };
  switch (node.type) {
    case 'word':
    case 'number': {
      const unescaped = unescapeUnquoted(raw);
      return { value: unescaped, text: unescaped, unquoted: raw.replace(/\\(\n|.)/gs, ''), brace: false };
    }
    case 'raw_string': {
      const inner = raw.slice(1, -1);
      return { value: inner, text: inner, unquoted: '', brace: false };
    }
    case 'ansi_c_string': {
      const decoded = decodeAnsiC(raw.slice(2, -1));
      return { value: decoded, text: decoded, unquoted: '', brace: false };
    }
    case 'string': {
      // Text between the children (spaces, newlines) is content too: the grammar leaves it out.
      let value: string | undefined = '';
      let text = '';
      let from = node.startIndex + 1;
      const literal = (end: number) => {
        const content = unescapeDoubleQuoted(source.slice(from, end));
        value = value === undefined ? undefined : value + content;
        text += content;
      };
      for (const child of node.namedChildren) {
        if (!child || child.type === 'string_content') continue;
        literal(child.startIndex);
        value = undefined;
        text += source.slice(child.startIndex, child.endIndex);
        from = child.endIndex;
      }
      literal(Math.max(from, node.endIndex - 1));
      return { value, text, unquoted: '', brace: false };
    }
    case 'concatenation': {
      let value: string | undefined = '';
      let text = '';
      let unquoted = '';
      let brace = false;
      for (const child of node.children) {
        if (!child) continue;
        const part = child.isNamed
          ? partsOf(child, source)
          : {
              value: source.slice(child.startIndex, child.endIndex),
              text: source.slice(child.startIndex, child.endIndex),
              unquoted: source.slice(child.startIndex, child.endIndex),
              brace: false,
            };
        value = value === undefined || part.value === undefined ? undefined : value + part.value;
        text += part.text;
        unquoted += part.unquoted;
        brace ||= part.brace;
      }
      return { value, text, unquoted, brace };
    }
    case 'brace_expression':
      return { value: raw, text: raw, unquoted: raw, brace: true };
    case 'extglob_pattern':
      return { value: raw, text: raw, unquoted: '*', brace: false };
    default:
      // Expansions, substitutions and anything unexpected: known only at run time.
      return { value: undefined, text: raw, unquoted: '', brace: false };
  }
}

/** Unquoted text: a backslash quotes the next character; backslash-newline disappears. */
function unescapeUnquoted(text: string): string {
  return text.replace(/\\(\n|.)/gs, (_, ch: string) => (ch === '\n' ? '' : ch));
}

/** Inside double quotes a backslash quotes only `$`, `` ` ``, `"`, `\` and newline. */
function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\([$`"\\\n])/g, (_, ch: string) => (ch === '\n' ? '' : ch));
}

const ANSI_C_ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** `$'…'` contents: C escapes, octal, hex and Unicode. */
function decodeAnsiC(text: string): string {
  return text.replace(
    /\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.)|(.))/gs,
    (whole, octal?: string, hex?: string, u4?: string, u8?: string, control?: string, other?: string) => {
      const code =
        octal !== undefined
          ? Number.parseInt(octal, 8)
          : hex !== undefined
            ? Number.parseInt(hex, 16)
            : (u4 ?? u8) !== undefined
              ? Number.parseInt((u4 ?? u8) as string, 16)
              : undefined;
      if (code !== undefined) return code <= 0x10ffff ? String.fromCodePoint(code) : '';
      if (control !== undefined) return String.fromCharCode(control.charCodeAt(0) & 0x1f);
      return ANSI_C_ESCAPES[other as string] ?? whole;
    },
  );
}
