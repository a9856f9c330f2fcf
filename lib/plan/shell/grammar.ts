/**
 * The bash grammar: tree-sitter-bash compiled to WebAssembly, run by web-tree-sitter. Loaded once
 * per process by this module's top-level await (about 30 ms), so parsing is synchronous for every
 * caller: the validator, the risk marks and the compiler, which runs inside a CDK constructor.
 *
 * The two .wasm files are found through Node's resolution (a checkout or an npm install), else
 * beside the importing bundle: lib/cdk/harness-function.ts copies them next to every Lambda bundle
 * that contains this module.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Language, type Node, Parser, type Tree } from 'web-tree-sitter';

/** The grammar's and the runtime's WebAssembly files: package specifier and file name. */
export const SHELL_WASM_FILES = [
  { specifier: 'tree-sitter-bash/tree-sitter-bash.wasm', file: 'tree-sitter-bash.wasm' },
  { specifier: 'web-tree-sitter/tree-sitter.wasm', file: 'tree-sitter.wasm' },
] as const;

/** Where a .wasm file is: resolved as a package file, else beside this module (or the bundle holding it). */
export function shellWasmPath(specifier: string, file: string): string {
  try {
    return createRequire(import.meta.url).resolve(specifier);
  } catch {
    const beside = fileURLToPath(new URL(`./${file}`, import.meta.url));
    if (existsSync(beside)) return beside;
    throw new Error(`${file} not found: neither the package ${specifier} nor ${beside} exists`);
  }
}

const [grammarFile, runtimeFile] = SHELL_WASM_FILES;
await Parser.init({ locateFile: () => shellWasmPath(runtimeFile.specifier, runtimeFile.file) });
const bash = await Language.load(shellWasmPath(grammarFile.specifier, grammarFile.file));
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

/** Every node of a tree in document order (pre-order), walked without recursion. */
export function* nodesOf(tree: Tree): Generator<Node> {
  const cursor = tree.walk();
  try {
    for (;;) {
      yield cursor.currentNode;
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) if (!cursor.gotoParent()) return;
    }
  } finally {
    cursor.delete();
  }
}
