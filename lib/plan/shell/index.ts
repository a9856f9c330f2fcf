/**
 * Shell analysis with tree-sitter's bash grammar: whether a command is valid shell (located
 * syntax errors) and what in it changes or deletes something hard to undo (located findings,
 * each with its reason). Synchronous; the grammar loads once when this module is imported.
 * Also where a plan reference may stand as data (references.ts). The rules: rules.ts (commands),
 * wrappers.ts (what is seen through), analyze.ts (the walk);
 * docs/shell-analysis.md says them in prose.
 */
export {
  type AnalyzeOptions,
  analyzeShell,
  describeFinding,
  MAX_SHELL_NESTING,
  type ShellAnalysis,
  type ShellFinding,
  type ShellPosition,
  type ShellSyntaxError,
} from './analyze.ts';
export { placeOf as outsideWorkspacePath } from './outside.ts';
export {
  codeRunningEnvName,
  placeShellReferences,
  type ShellReferenceFilled,
  type ShellReferencePlace,
  type ShellReferenceRefused,
} from './references.ts';
export { SHELL_WASM_FILES, shellWasmPath } from './wasm-files.ts';
