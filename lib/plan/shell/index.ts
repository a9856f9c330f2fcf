/**
 * Shell analysis with tree-sitter's bash grammar: whether a command is valid shell (located
 * syntax errors) and what in it changes or deletes something hard to undo (located findings,
 * each with its reason), sorted into three classes: read-only (proven), destructive, unknown.
 * Synchronous; the grammar loads once when this module is imported. The rules, as tables:
 * rules.ts (destructive commands), read-only.ts (the allow-list), wrappers.ts (what is seen
 * through), interpreters.ts (code in other languages), variables.ts (variables that change what
 * runs), exfiltration.ts (data sent away), background.ts (what outlives the command); analyze.ts
 * (the walk). Also where a plan reference
 * may stand as data (references.ts); a command with its env values written in, as policy reads it
 * at run time (written-variables.ts);
 * docs/shell-analysis.md says them in prose.
 */
export {
  type AnalyzeOptions,
  analyzeShell,
  describeFinding,
  MAX_SHELL_NESTING,
  type ShellAnalysis,
  type ShellEffect,
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
export { executionVariable, settingReason } from './variables.ts';
export { SHELL_WASM_FILES, shellWasmPath } from './wasm-files.ts';
export { escapeDoubleQuoted, writeVariables } from './written-variables.ts';
