/**
 * The bash grammar: tree-sitter-bash compiled to WebAssembly, run by web-tree-sitter. Loaded once
 * per process by this module's top-level await (about 30 ms), so parsing is synchronous for every
 * caller: the validator, the risk marks and the compiler, which runs inside a CDK constructor.
 *
 * The two .wasm files: wasm-files.ts.
 */
import { setFlagsFromString } from 'node:v8';
import { Language, type Node, Parser, type Tree } from 'web-tree-sitter';
import { SHELL_WASM_FILES, shellWasmPath } from './wasm-files.ts';

const [grammarFile, runtimeFile] = SHELL_WASM_FILES;
// V8's optimizing tier would recompile the grammar's huge lexer functions once they are hot: about
// a second of CPU, which a short CLI run then waits for at exit. Plan commands are small, and the
// baseline compiler parses them as fast; so these two modules are compiled by it alone.
setFlagsFromString('--liftoff-only');
let bash: Language;
try {
  await Parser.init({ locateFile: () => shellWasmPath(runtimeFile.specifier, runtimeFile.file) });
  bash = await Language.load(shellWasmPath(grammarFile.specifier, grammarFile.file));
} finally {
  setFlagsFromString('--no-liftoff-only');
}
const parser = new Parser();
parser.setLanguage(bash);

/**
 * The syntax tree of a bash command, or undefined when parsing would run past `deadline`
 * (a `performance.now()` time; pathological input such as thousands of open here-documents).
 * The caller owns the tree and must `delete()` it (it lives in WebAssembly memory).
 */
export function parseBash(text: string, deadline: number): Tree | undefined {
  const tree = parser.parse(text, null, { progressCallback: () => performance.now() > deadline });
  if (tree) return tree;
  parser.reset();
  return undefined;
}

/** The nodes of the given types, in document order (one call into the parser: walking node by node from JavaScript costs more than parsing). */
export function nodesOfTypes(tree: Tree, types: readonly string[]): Node[] {
  return tree.rootNode.descendantsOfType([...types]).filter((node): node is Node => node !== null);
}
