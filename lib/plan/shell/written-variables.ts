/**
 * A command as the platform's policy reads it at run time: the values of the step's own `env`
 * written in place of their expansions (`$NAME`, `${NAME}`, `${NAME:-…}`, `${#NAME}`), so
 * `find dir $OPT` with `OPT=-delete` is judged as the `find dir -delete` it runs. Never run.
 *
 * It errs towards more effect, never less: every textual expansion of a name is written in,
 * also where bash would not expand it (single quotes, an escaped `$`, a quoted here-document),
 * since a program the command starts may (`bash -c '… $NAME'`). Inside double quotes the value
 * is escaped, as bash reads it there (one literal); anywhere else it is written as it is, so a
 * value that bash would only split into words is read as the code it looks like. A command that
 * assigns the name itself is judged as written too (lib/runtime/steps/call.ts keeps both).
 */
import type { Node } from 'web-tree-sitter';
import { parseBash } from './grammar.ts';

const PARSE_BUDGET_MS = 2_000;

/** Inside double quotes only backslash, `$`, backtick and `"` are special. */
export function escapeDoubleQuoted(value: string): string {
  return value.replace(/[\\$`"]/g, '\\$&');
}

/** `command` with each of `values` (variable name → value) written in place of its expansions. */
export function writeVariables(command: string, values: ReadonlyMap<string, string>): string {
  const names = [...values.keys()].filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
  if (names.length === 0) return command;
  // Longest first, and never a prefix of a longer name (`$OPTX` is not `$OPT`).
  const alternatives = names.sort((a, b) => b.length - a.length).join('|');
  const expansion = new RegExp(
    `\\$(?:\\{[#!]?(${alternatives})(?![A-Za-z0-9_])[^}]*\\}|(${alternatives})(?![A-Za-z0-9_]))`,
    'g',
  );
  const found = [...command.matchAll(expansion)];
  if (found.length === 0) return command;
  const tree = parseBash(command, performance.now() + PARSE_BUDGET_MS);
  try {
    let written = '';
    let last = 0;
    for (const match of found) {
      const start = match.index ?? 0;
      const value = values.get((match[1] ?? match[2]) as string) as string;
      const node = tree?.rootNode.descendantForIndex(start, start + match[0].length) ?? null;
      written += command.slice(last, start) + (inDoubleQuotes(node) ? escapeDoubleQuoted(value) : value);
      last = start + match[0].length;
    }
    return written + command.slice(last);
  } finally {
    tree?.delete();
  }
}

/** The nearest quoting around `node` is double quotes (where bash reads the value as one literal). */
function inDoubleQuotes(node: Node | null): boolean {
  for (let n = node; n; n = n.parent) {
    if (n.type === 'string') return true;
    // A substitution's words are quoted afresh: `"$(find $OPT)"` splits the value.
    if (n.type === 'command_substitution' || n.type === 'process_substitution') return false;
    if (n.type === 'raw_string' || n.type === 'ansi_c_string' || n.type.startsWith('heredoc')) return false;
  }
  return false;
}
