/**
 * The WebAssembly files the shell parser loads: tree-sitter-bash's grammar and web-tree-sitter's
 * runtime. Found through Node's resolution (a checkout, an npm install), else beside the module
 * that asks, which in a Lambda is the bundle: lib/cdk/harness-function.ts copies both files next to
 * every bundle that contains the parser. No side effects, so the CDK can import it cheaply.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Package specifier and file name of each .wasm file; the grammar first. */
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
