/**
 * Syntax errors from the tree: the first ERROR or MISSING node, said the way a person reads it
 * ("unexpected `fi`", "`if` is not closed", "expected `done`"), at a 0-based place.
 */
import type { Node, Tree } from 'web-tree-sitter';
import type { Place } from './words.ts';

export interface SyntaxProblem {
  readonly message: string;
  readonly at: Place;
}

const SHOWN_CHARACTERS = 24;

/** Words bash reads as reserved only where a command starts; the grammar takes them for command names. */
const RESERVED_WORDS = new Set(['then', 'elif', 'else', 'fi', 'do', 'done', 'esac']);
const CASE_TERMINATORS = new Set([';;', ';&', ';;&']);

/** Node types `misplacedWord` looks at. */
export const MISPLACED_WORD_TYPES: ReadonlySet<string> = new Set(['command_name', ...CASE_TERMINATORS]);

/**
 * The first syntax error in document order, or undefined when the command parses. `candidates`
 * are the tree's nodes of MISPLACED_WORD_TYPES, in document order.
 */
export function firstSyntaxError(
  tree: Tree,
  source: string,
  candidates: readonly Node[],
): SyntaxProblem | undefined {
  if (tree.rootNode.hasError) return firstErrorNode(tree, source);
  for (const node of candidates) {
    const problem = misplacedWord(node, source);
    if (problem) return problem;
  }
  return undefined;
}

/** `fi` or `done` where a command starts, `;;` outside `case`: the grammar accepts them, bash does not. */
function misplacedWord(node: Node, source: string): SyntaxProblem | undefined {
  const word = node.type === 'command_name' ? node.firstChild : undefined;
  const misplaced =
    (word?.type === 'word' && RESERVED_WORDS.has(source.slice(word.startIndex, word.endIndex))) ||
    (CASE_TERMINATORS.has(node.type) && node.parent?.type !== 'case_item');
  return misplaced
    ? { message: `unexpected ${show(source.slice(node.startIndex, node.endIndex))}`, at: placeOf(node) }
    : undefined;
}

function firstErrorNode(tree: Tree, source: string): SyntaxProblem | undefined {
  const cursor = tree.walk();
  try {
    for (;;) {
      const node = cursor.currentNode;
      if (node.isMissing) return { message: `expected ${describeMissing(node.type)}`, at: placeOf(node) };
      if (node.isError) return describeError(node, source);
      // Descend only into subtrees that hold the error.
      if (node.hasError && cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) if (!cursor.gotoParent()) return undefined;
    }
  } finally {
    cursor.delete();
  }
}

function describeMissing(type: string): string {
  return /^[a-z_]+$/.test(type) && !['fi', 'done', 'esac', 'then', 'do', 'in'].includes(type)
    ? `a ${type.replaceAll('_', ' ')}`
    : `\`${type}\``;
}

function describeError(node: Node, source: string): SyntaxProblem {
  const first = firstLeaf(node);
  const token = first ? source.slice(first.startIndex, first.endIndex) : '';
  const at = placeOf(first ?? node);
  const shown = show(token);
  // An error that runs to the end of the text is a construct the text never closes.
  if (source.slice(node.endIndex).trim() === '') {
    const quote = /^(?:\$?['"`]|\$\(|\$\{)/.exec(token)?.[0];
    if (quote) return { message: `\`${quote}\` is not closed before the end of the command`, at };
    if (node.childCount > 1) return { message: `${shown} is not closed before the end of the command`, at };
  }
  if (token.trim() === '') return { message: 'unexpected end of the command', at };
  return { message: `unexpected ${shown}`, at };
}

function show(token: string): string {
  const oneLine = token.replace(/\s+/g, ' ').trim();
  const cut = oneLine.length > SHOWN_CHARACTERS ? `${oneLine.slice(0, SHOWN_CHARACTERS)}…` : oneLine;
  return `\`${cut}\``;
}

function firstLeaf(node: Node): Node | undefined {
  let current: Node | null = node;
  while (current && current.childCount > 0) current = current.child(0);
  return current ?? undefined;
}

function placeOf(node: Node): Place {
  return { row: node.startPosition.row, column: node.startPosition.column };
}
