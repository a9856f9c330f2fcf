/**
 * `analyzeShell`: what a shell command would run, from its syntax tree, and which of it changes or
 * deletes something hard to undo (rules.ts), seeing through quoting, wrappers and nesting
 * (wrappers.ts): pipelines, lists, subshells, groups, functions, if/while/for/case bodies, `$(…)`,
 * backticks, process substitution, here-documents fed to a shell, and `bash -c '…'` strings parsed
 * again (up to MAX_SHELL_NESTING deep). What it cannot see through counts as destructive, with a reason:
 * a command name known only at run time (`$CMD`, `"${steps.x.bin}"`), `eval` of built text,
 * `source`, a shell reading commands from a pipe, text that does not parse.
 *
 * `${steps.…}`, `${context.…}` and `${secrets.…}` references are filled in as text before the
 * command runs; the analysis reads each as a value known only at run time.
 */
import type { Node } from 'web-tree-sitter';
import { nodesOfTypes, parseBash } from './grammar.ts';
import { outsideRedirect, outsideWords } from './outside.ts';
import { destructiveReason, destructiveSql, isBlockDevice, TEXT_COMMANDS } from './rules.ts';
import { firstSyntaxError, MISPLACED_WORD_TYPES } from './syntax.ts';
import { type Place, type ShellWord, wordOf } from './words.ts';
import { type Inner, innerCommands } from './wrappers.ts';

/** A 1-based place in the analysed command (UTF-16 columns, as editors count). */
export interface ShellPosition {
  readonly line: number;
  readonly column: number;
}

export interface ShellFinding extends ShellPosition {
  /** The command that does it, as written (whitespace collapsed, long ones cut), e.g. `rm -rf out`. */
  readonly command: string;
  /** Why it counts as destructive, e.g. `deletes recursively`, `cannot tell what runs: eval …`. */
  readonly reason: string;
}

export interface ShellSyntaxError extends ShellPosition {
  /** What is wrong, e.g. "unexpected `fi`" (the position is in `line` and `column`). */
  readonly message: string;
}

export interface ShellAnalysis {
  /** Set when the command is not valid shell; it then also counts as destructive (it cannot be read). */
  readonly syntaxError?: ShellSyntaxError;
  /** Everything it would run that changes or deletes something hard to undo; empty when harmless. */
  readonly destructive: readonly ShellFinding[];
  /**
   * Every place it names outside the workspace it runs in (outside.ts): an absolute path, the
   * home directory, a path above the workspace. Not destructive in itself: the gate marks it.
   */
  readonly outsideWorkspace: readonly ShellFinding[];
}

export interface AnalyzeOptions {
  /** Parsing time allowed for one command, nested strings included. @default 2000 ms */
  readonly timeBudgetMs?: number;
}

const DEFAULT_TIME_BUDGET_MS = 2_000;
/** `bash -c "bash -c '…'"` nesting read at most this deep; deeper counts as destructive. */
export const MAX_SHELL_NESTING = 8;
/** Wrappers (`sudo env nice …`) taken off one command at most this many times. */
const MAX_WRAPPERS = 32;
const SHOWN_CHARACTERS = 80;
const UNKNOWN = 'cannot tell what runs: ';
/** A plan reference as the shell analysis reads it (malformed ones included: they are filled in too). */
export const PLAN_REFERENCE = /\$\{((?:steps|context|secrets)\.[^}]*)\}/g;

type Stdin =
  | { readonly kind: 'none' | 'file' }
  | {
      readonly kind: 'text';
      readonly text: string;
      /** Where the text starts when it is a verbatim slice of the parsed text. */
      readonly textAt: Place | undefined;
      readonly textIndex: number | undefined;
      /** Where the text comes from, for a text that is not a slice. */
      readonly at: Place;
    }
  | { readonly kind: 'pipe'; readonly from: string };

/** One parsed text: the command itself, or a string nested in it. */
interface Frame {
  /** The text parsed (plan references masked as shell variables of the same length). */
  readonly source: string;
  /** The text as written, for showing. */
  readonly shown: string;
  readonly depth: number;
  /** Turns a place in this text into a position in the analysed command. */
  readonly locate: (place: Place) => ShellPosition;
}

interface Analysis {
  readonly findings: ShellFinding[];
  readonly outside: ShellFinding[];
  readonly seen: Set<string>;
  readonly deadline: number;
}

/** Recent results by command: the validator, the risk marks and the gate ask about the same commands. */
const recent = new Map<string, ShellAnalysis>();
const RECENT_LIMIT = 1_000;

/** Analyses one shell command (the text `bash -c` would run). Never throws. */
export function analyzeShell(command: string, options: AnalyzeOptions = {}): ShellAnalysis {
  if (options.timeBudgetMs !== undefined) return analyzeUncached(command, options.timeBudgetMs);
  const known = recent.get(command);
  if (known) return known;
  const result = analyzeUncached(command, DEFAULT_TIME_BUDGET_MS);
  if (recent.size >= RECENT_LIMIT) recent.delete(recent.keys().next().value as string);
  recent.set(command, result);
  return result;
}

/** A finding as one phrase: "`rm -rf out` deletes recursively". */
export function describeFinding(finding: ShellFinding): string {
  return `\`${finding.command}\` ${finding.reason}`;
}

function analyzeUncached(command: string, timeBudgetMs: number): ShellAnalysis {
  const analysis: Analysis = {
    findings: [],
    outside: [],
    seen: new Set(),
    deadline: performance.now() + timeBudgetMs,
  };
  const frame: Frame = {
    source: maskReferences(command),
    shown: command,
    depth: 0,
    locate: ({ row, column }) => ({ line: row + 1, column: column + 1 }),
  };
  let syntaxError: ShellSyntaxError | undefined;
  try {
    const problem = analyzeFrame(frame, analysis);
    if (problem) {
      syntaxError = { message: problem.message, ...frame.locate(problem.at) };
      report(analysis, frame, problem.at, command, `${UNKNOWN}it is not valid shell (${problem.message})`);
    }
  } catch (error) {
    // A bug here must not let a command through as harmless.
    report(
      analysis,
      frame,
      { row: 0, column: 0 },
      command,
      `${UNKNOWN}the analysis failed (${String(error)})`,
    );
  }
  const byPlace = (a: ShellFinding, b: ShellFinding) => a.line - b.line || a.column - b.column;
  const destructive = Object.freeze(analysis.findings.sort(byPlace));
  const outsideWorkspace = Object.freeze(analysis.outside.sort(byPlace));
  return Object.freeze(
    syntaxError ? { syntaxError, destructive, outsideWorkspace } : { destructive, outsideWorkspace },
  );
}

/** `${steps.build.dir}` → `${steps_build_dir}`: a shell variable of the same length, so places stay put. */
export function maskReferences(text: string): string {
  return text.includes('${')
    ? text.replace(PLAN_REFERENCE, (_, name: string) => `\${${name.replace(/[^A-Za-z0-9_]/g, '_')}}`)
    : text;
}

/** The nodes the analysis reads: commands, redirects, pipelines, and what syntax.ts checks. */
const WANTED_NODES: readonly string[] = [
  'command',
  'file_redirect',
  'pipeline',
  'redirected_statement',
  ...MISPLACED_WORD_TYPES,
];

/** Parses and analyses one text; returns its syntax error, if any. */
function analyzeFrame(frame: Frame, analysis: Analysis): ReturnType<typeof firstSyntaxError> {
  const tree = parseBash(frame.source, analysis.deadline);
  if (!tree) {
    report(
      analysis,
      frame,
      { row: 0, column: 0 },
      frame.shown,
      `${UNKNOWN}it is too complex to analyse in time`,
    );
    return undefined;
  }
  try {
    const nodes = nodesOfTypes(tree, WANTED_NODES);
    const stdin = stdinSources(nodes, frame);
    for (const node of nodes) {
      if (node.type === 'command') analyzeCommandNode(node, stdin.get(node.id), frame, analysis);
      else if (node.type === 'file_redirect') checkRedirect(node, frame, analysis);
    }
    const candidates = nodes.filter((node) => MISPLACED_WORD_TYPES.has(node.type));
    return firstSyntaxError(tree, frame.source, candidates);
  } finally {
    tree.delete();
  }
}

function analyzeCommandNode(node: Node, stdin: Stdin | undefined, frame: Frame, analysis: Analysis): void {
  const name = node.childForFieldName('name');
  const nameWord = name?.firstNamedChild ?? name;
  if (!nameWord) return;
  const words = [nameWord, ...node.childrenForFieldName('argument')]
    .filter((n): n is Node => n !== null)
    .map((n) => wordOf(n, frame.source, frame.shown));
  const shown = frame.shown.slice(node.startIndex, node.endIndex);
  analyzeCall(words, stdin ?? { kind: 'none' }, shown, frame, analysis, 0);
}

/** One command line: its name, arguments and standard input. */
function analyzeCall(
  words: readonly ShellWord[],
  stdin: Stdin,
  shown: string,
  frame: Frame,
  analysis: Analysis,
  wrapped: number,
): void {
  const [nameWord, ...args] = words;
  if (!nameWord) return;
  const flag = (reason: string) => report(analysis, frame, nameWord.at, shown, reason);
  const unknown =
    nameWord.value === undefined
      ? `the command name is known only at run time (\`${nameWord.raw}\`)`
      : nameWord.pattern
        ? `the command name is a pattern the shell expands (\`${nameWord.raw}\`)`
        : wrapped > MAX_WRAPPERS
          ? `more than ${MAX_WRAPPERS} wrapper commands in a row`
          : undefined;
  if (unknown !== undefined || nameWord.value === undefined) {
    flag(`${UNKNOWN}${unknown}`);
    return;
  }
  const name = nameWord.value.slice(nameWord.value.lastIndexOf('/') + 1);
  if (args.length > 0 && args.every((word) => word.value === '--help' || word.value === '--version')) return;
  for (const { word, reason } of outsideWords(name, nameWord, args))
    report(analysis, frame, word.at, shown, reason, analysis.outside);

  for (const inner of innerCommands(name, args))
    runInner(inner, stdin, shown, frame, analysis, wrapped, nameWord);

  const reason = destructiveReason(name, args);
  if (reason) flag(reason);
  if (!TEXT_COMMANDS.has(name)) {
    const sql =
      args.map((word) => destructiveSql(word.text)).find((found) => found !== undefined) ??
      (stdin.kind === 'text' ? destructiveSql(stdin.text) : undefined);
    if (sql) flag(`runs SQL \`${sql}\``);
  }
}

/** What a wrapper or runner runs: another command line, a script parsed again, or something unknowable. */
function runInner(
  inner: Inner,
  stdin: Stdin,
  shown: string,
  frame: Frame,
  analysis: Analysis,
  wrapped: number,
  nameWord: ShellWord,
): void {
  if (inner.kind === 'command') {
    analyzeCall(
      inner.words,
      inner.keepsStdin ? stdin : { kind: 'none' },
      shown,
      frame,
      analysis,
      wrapped + 1,
    );
  } else if (inner.kind === 'opaque') {
    report(analysis, frame, nameWord.at, shown, `${UNKNOWN}${inner.reason}`);
  } else if (inner.kind === 'script') {
    const [first] = inner.words;
    if (!first) return;
    const verbatim = inner.words.length === 1 ? first : undefined;
    const text = inner.words.map((word) => word.text).join(' ');
    analyzeNested(text, verbatim?.textAt, verbatim?.textIndex, first.at, inner.runner, frame, analysis);
  } else if (stdin.kind === 'text') {
    const runner = `${inner.runner} reading its input`;
    analyzeNested(stdin.text, stdin.textAt, stdin.textIndex, stdin.at, runner, frame, analysis);
  } else if (stdin.kind === 'pipe') {
    const reason = `${UNKNOWN}${inner.runner} runs commands read from the output of \`${stdin.from}\``;
    report(analysis, frame, nameWord.at, shown, reason);
  }
}

/** Parses `text` (run by `runner`) as shell again, one level deeper. */
function analyzeNested(
  text: string,
  textAt: Place | undefined,
  textIndex: number | undefined,
  at: Place,
  runner: string,
  frame: Frame,
  analysis: Analysis,
): void {
  // The text as written (references unmasked) when it is a slice of the outer text.
  const shown = textIndex === undefined ? text : frame.shown.slice(textIndex, textIndex + text.length);
  if (frame.depth + 1 > MAX_SHELL_NESTING) {
    report(
      analysis,
      frame,
      at,
      shown,
      `${UNKNOWN}${runner} strings nested more than ${MAX_SHELL_NESTING} deep`,
    );
    return;
  }
  const locate = textAt
    ? ({ row, column }: Place) =>
        frame.locate(
          row === 0 ? { row: textAt.row, column: textAt.column + column } : { row: textAt.row + row, column },
        )
    : () => frame.locate(at);
  const nested: Frame = { source: text, shown, depth: frame.depth + 1, locate };
  const problem = analyzeFrame(nested, analysis);
  if (problem)
    report(
      analysis,
      nested,
      problem.at,
      shown,
      `${UNKNOWN}the ${runner} script is not valid shell (${problem.message})`,
    );
}

/**
 * A write redirect to a disk device (`> /dev/sda`): destructive. Ordinary file writes are not.
 * Any redirect's file outside the workspace (`< /etc/passwd`, `> ~/x`) is marked as such.
 */
function checkRedirect(node: Node, frame: Frame, analysis: Analysis): void {
  const operator = node.children.find((child) => child !== null && !child.isNamed)?.type ?? '';
  const destination = node.childForFieldName('destination');
  if (!destination) return;
  const word = wordOf(destination, frame.source, frame.shown);
  const at = { row: node.startPosition.row, column: node.startPosition.column };
  const shown = frame.shown.slice((node.parent ?? node).startIndex, (node.parent ?? node).endIndex);
  const target = word.value;
  if (operator.includes('>') && target !== undefined && isBlockDevice(target))
    report(analysis, frame, at, shown, `writes to the block device ${target}`);
  // `2>&1`, `>&2`: a descriptor, not a file.
  if (operator.includes('&')) return;
  const outside = outsideRedirect(word);
  if (outside) report(analysis, frame, word.at, shown, outside, analysis.outside);
}

/**
 * Where each command's standard input comes from, by node id: a here-document or here-string
 * (text), a `<` file, or the previous command of a pipeline (its text when it is `echo`/`printf`
 * of constants or `cat` of a here-document, else the command's name).
 */
function stdinSources(nodes: readonly Node[], frame: Frame): Map<number, Stdin> {
  const sources = new Map<number, Stdin>();
  const pipelines: Node[] = [];
  for (const node of nodes) {
    if (node.type === 'pipeline') pipelines.push(node);
    else if (node.type === 'command') {
      for (const redirect of node.childrenForFieldName('redirect'))
        if (redirect) setRedirectInput(node, redirect, sources, frame);
    } else if (node.type === 'redirected_statement') {
      const target = lastCommand(node.childForFieldName('body'));
      if (!target) continue;
      for (const redirect of node.childrenForFieldName('redirect')) {
        if (!redirect) continue;
        setRedirectInput(target, redirect, sources, frame);
        // `cat <<EOF | bash`: the pipeline after a here-document hangs off the redirect.
        const rest = redirect.children.find((child) => child?.type === 'pipeline');
        if (rest)
          pipeInto([target, ...rest.namedChildren.filter((c): c is Node => c !== null)], sources, frame);
      }
    }
  }
  for (const pipeline of pipelines)
    pipeInto(
      pipeline.namedChildren.filter((c): c is Node => c !== null),
      sources,
      frame,
    );
  return sources;
}

function setRedirectInput(target: Node, redirect: Node, sources: Map<number, Stdin>, frame: Frame): void {
  const at = { row: redirect.startPosition.row, column: redirect.startPosition.column };
  if (redirect.type === 'heredoc_redirect') {
    const body = redirect.children.find((child) => child?.type === 'heredoc_body');
    if (!body) return;
    const place = { row: body.startPosition.row, column: body.startPosition.column };
    sources.set(target.id, {
      kind: 'text',
      text: frame.source.slice(body.startIndex, body.endIndex),
      textAt: place,
      textIndex: body.startIndex,
      at: place,
    });
  } else if (redirect.type === 'herestring_redirect') {
    const argument = redirect.namedChildren.find((child) => child !== null);
    if (!argument) return;
    const word = wordOf(argument, frame.source, frame.shown);
    sources.set(target.id, {
      kind: 'text',
      text: word.text,
      textAt: word.textAt,
      textIndex: word.textIndex,
      at,
    });
  } else if (redirect.type === 'file_redirect') {
    const operator = redirect.children.find((child) => child !== null && !child.isNamed)?.type;
    if (operator === '<') sources.set(target.id, { kind: 'file' });
  }
}

/** Each stage of a pipeline reads what the stage before it writes (unless a redirect said otherwise). */
function pipeInto(stages: readonly Node[], sources: Map<number, Stdin>, frame: Frame): void {
  for (let i = 1; i < stages.length; i++) {
    const reader = firstCommand(stages[i]!);
    if (!reader || sources.has(reader.id)) continue;
    sources.set(reader.id, outputOf(stages[i - 1]!, sources, frame));
  }
}

/** What a pipeline stage writes: its text when it is known, else where it comes from. */
function outputOf(stage: Node, sources: Map<number, Stdin>, frame: Frame): Stdin {
  const writer = lastCommand(stage);
  if (!writer)
    return { kind: 'pipe', from: frame.shown.slice(stage.startIndex, stage.endIndex).slice(0, 40) };
  const name = writer.childForFieldName('name');
  const nameWord = name?.firstNamedChild ?? name;
  const words = [nameWord, ...writer.childrenForFieldName('argument')]
    .filter((n): n is Node => n !== null)
    .map((n) => wordOf(n, frame.source, frame.shown));
  const [command, ...args] = words;
  const at = command?.at ?? { row: 0, column: 0 };
  const known = args.every((word) => word.value !== undefined);
  if (command?.value === 'echo' && known) {
    const text = args
      .map((word) => word.value!)
      .filter((value, i) => !(i === 0 && /^-[neE]+$/.test(value)))
      .join(' ');
    return { kind: 'text', text, textAt: undefined, textIndex: undefined, at };
  }
  if (command?.value === 'printf' && known && args[0]) {
    const [format, ...rest] = args.map((word) => word.value!);
    const text = format!.includes('%') ? rest.join('\n') : format!.replace(/\\n/g, '\n');
    return { kind: 'text', text, textAt: undefined, textIndex: undefined, at };
  }
  const input = sources.get(writer.id);
  if (command?.value === 'cat' && args.length === 0 && input?.kind === 'text') return input;
  return { kind: 'pipe', from: command?.raw ?? 'a command' };
}

/** The command a statement ends with (`a && b | c` → `c`), where a redirect after it applies. */
function lastCommand(node: Node | null): Node | undefined {
  let current = node;
  while (current && current.type !== 'command') {
    if (current.type === 'redirected_statement') current = current.childForFieldName('body');
    else if (['pipeline', 'list', 'negated_command'].includes(current.type)) current = current.lastNamedChild;
    else return undefined;
  }
  return current ?? undefined;
}

/** The command a statement starts with (`a | b` → `a`), which reads the statement's input. */
function firstCommand(node: Node): Node | undefined {
  let current: Node | null = node;
  while (current && current.type !== 'command') {
    if (current.type === 'redirected_statement') current = current.childForFieldName('body');
    else if (['pipeline', 'list', 'negated_command'].includes(current.type))
      current = current.firstNamedChild;
    else return undefined;
  }
  return current ?? undefined;
}

function report(
  analysis: Analysis,
  frame: Frame,
  at: Place,
  command: string,
  reason: string,
  into: ShellFinding[] = analysis.findings,
): void {
  const position = frame.locate(at);
  const key = `${position.line}:${position.column}:${reason}`;
  if (analysis.seen.has(key)) return;
  analysis.seen.add(key);
  const oneLine = command.replace(/\s+/g, ' ').trim();
  into.push({
    command: oneLine.length > SHOWN_CHARACTERS ? `${oneLine.slice(0, SHOWN_CHARACTERS - 1)}…` : oneLine,
    reason,
    ...position,
  });
}
