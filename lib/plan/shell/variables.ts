/**
 * Environment variables that change what runs: where commands are looked up (`PATH`), code a
 * shell or a runtime loads before anything else (`BASH_ENV`, `LD_PRELOAD`, `NODE_OPTIONS`, …),
 * commands a tool runs on its own (`GIT_SSH_COMMAND`, `PAGER`). Setting one makes every later
 * command of the text run something the analysis cannot see; the call's effect is then unknown.
 * One variable or prefix a line; tests/plan/shell-tables.test.ts proves each one is caught.
 */

/** Names that change what runs, each with what it does. */
export const EXECUTION_VARIABLES: ReadonlyMap<string, string> = new Map([
  ['PATH', 'where commands are looked up'],
  ['BASH_ENV', 'a file bash runs before the command'],
  ['ENV', 'a file sh runs before the command'],
  ['SHELLOPTS', "the shell's options"],
  ['BASHOPTS', "the shell's options"],
  ['PS4', 'text the shell expands, substitutions included, before each traced command'],
  ['PROMPT_COMMAND', 'a command the shell runs'],
  ['IFS', 'how the shell splits words'],
  ['HOME', 'where programs read their configuration'],
  ['XDG_CONFIG_HOME', 'where programs read their configuration'],
  ['NODE_OPTIONS', 'code Node.js loads first'],
  ['NODE_PATH', 'where Node.js finds modules'],
  ['PYTHONPATH', 'where Python finds modules'],
  ['PYTHONSTARTUP', 'code Python runs first'],
  ['PYTHONHOME', 'which Python runs'],
  ['PERL5OPT', 'options, code included, Perl reads first'],
  ['PERL5LIB', 'where Perl finds modules'],
  ['PERLLIB', 'where Perl finds modules'],
  ['RUBYOPT', 'options Ruby reads first'],
  ['RUBYLIB', 'where Ruby finds modules'],
  ['JAVA_TOOL_OPTIONS', 'agents and options the JVM loads'],
  ['_JAVA_OPTIONS', 'agents and options the JVM loads'],
  ['JDK_JAVA_OPTIONS', 'agents and options the JVM loads'],
  ['GIT_SSH', 'the program git runs to connect'],
  ['GIT_SSH_COMMAND', 'the command git runs to connect'],
  ['GIT_EXEC_PATH', 'where git finds its subcommands'],
  ['GIT_PAGER', 'the command git pipes its output into'],
  ['GIT_EDITOR', 'the command git runs to edit'],
  ['GIT_ASKPASS', 'the command git runs for a password'],
  ['SSH_ASKPASS', 'the command ssh runs for a password'],
  ['PAGER', 'the command programs pipe their output into'],
  ['EDITOR', 'the command programs run to edit'],
  ['VISUAL', 'the command programs run to edit'],
  ['GCONV_PATH', 'libraries the C library loads'],
]);

/** Prefixes of names that change what runs. */
const EXECUTION_PREFIXES: readonly (readonly [string, string])[] = [
  ['LD_', 'libraries the dynamic loader loads'],
  ['DYLD_', 'libraries the dynamic loader loads'],
  ['BASH_FUNC_', 'a shell function defined from the environment'],
  ['GIT_CONFIG', "git's configuration, which can run commands"],
];

/** Why setting `name` changes what runs (e.g. "where commands are looked up"), or undefined. */
export function executionVariable(name: string): string | undefined {
  return EXECUTION_VARIABLES.get(name) ?? EXECUTION_PREFIXES.find(([prefix]) => name.startsWith(prefix))?.[1];
}

/** The reason a call's effect is unknown when it sets `name`, or undefined when `name` is harmless. */
export function settingReason(name: string): string | undefined {
  const what = executionVariable(name);
  return what === undefined ? undefined : `sets ${name} (${what}), which changes what runs`;
}
