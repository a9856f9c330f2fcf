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
import type { Node, Tree } from 'web-tree-sitter';
import { BACKGROUND_JOB, detachReason } from './background.ts';
import { exfiltrationReasons, redirectExfiltration } from './exfiltration.ts';
import { nodesOfTypes, parseBash } from './grammar.ts';
import { codeDeletion, embeddedShell, INTERPRETERS, inlineCode, interpreterReason } from './interpreters.ts';
import { scanOptions } from './options.ts';
import { outsideRedirect, outsideWords } from './outside.ts';
import { notReadOnlyReason } from './read-only.ts';
import { destructiveReason, destructiveSql, isBlockDevice, TEXT_COMMANDS } from './rules.ts';
import { firstSyntaxError, MISPLACED_WORD_TYPES } from './syntax.ts';
import { settingReason } from './variables.ts';
import { literalWord, type Place, type ShellWord, wordOf } from './words.ts';
import { type Inner, innerCommands, SHELLS, WRAPPERS } from './wrappers.ts';

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

/**
 * What a command does, proven: `read-only` (every command in it is on the reviewed allow-list of
 * read-only programs and options, every redirect, substitution, wrapper and script accounted
 * for), `destructive` (a known destructive form), or `unknown` (anything else).
 */
export type ShellEffect = 'read-only' | 'destructive' | 'unknown';

export interface ShellAnalysis {
  /** Set when the command is not valid shell; it then also counts as destructive (it cannot be read). */
  readonly syntaxError?: ShellSyntaxError;
  /** `destructive` when `destructive` is not empty, else `unknown` when `unknown` is not empty, else `read-only`. */
  readonly effect: ShellEffect;
  /** Everything it would run that changes or deletes something hard to undo. */
  readonly destructive: readonly ShellFinding[];
  /**
   * Everything in it not proven read-only nor known destructive, each with why: a program not on
   * the allow-list, code in another language, a script file, a write, a variable that changes what
   * runs (`PATH=…`), a wrapper that runs as another user or on another host.
   */
  readonly unknown: readonly ShellFinding[];
  /** What it sends away or reads of credentials (exfiltration.ts), whatever its effect. */
  readonly exfiltration: readonly ShellFinding[];
  /**
   * Every place it names outside the workspace it runs in (outside.ts): an absolute path, the
   * home directory, a path above the workspace. Not destructive in itself: the gate marks it.
   */
  readonly outsideWorkspace: readonly ShellFinding[];
  /**
   * What it would leave running after it ends (background.ts): a job started with `&` that no
   * later `wait` collects, `nohup`, `setsid`, `disown`, a daemonizing option.
   */
  readonly background: readonly ShellFinding[];
  /**
   * Every program it runs, as the shell will run it (quotes removed, wrappers and nested shells
   * seen through), in the order met; what a network program reaches is read from them
   * (destinations.ts). What it cannot read (text that does not parse, `eval`, a shell reading a
   * pipe) is a `destructive` finding that says it cannot tell what runs.
   */
  readonly programs: readonly ShellProgram[];
  /** Every file a redirect names (`> f`, `< /dev/tcp/host/80`), as the shell will open it. */
  readonly redirects: readonly ShellWord[];
}

/** One program a command runs: its name (undefined when known only at run time) and its words. */
export interface ShellProgram {
  /** The program's name without its directory (`/usr/bin/curl` is `curl`); undefined: `$CMD`, `$(…)`. */
  readonly name: string | undefined;
  /** The name as written. */
  readonly raw: string;
  readonly args: readonly ShellWord[];
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
/** How every finding about what the analysis could not read starts. */
export const UNKNOWN = 'cannot tell what runs: ';
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
  /** Files this text writes with known content (`printf '…' > x.sh`), by path: run later, they are read. */
  readonly written: Map<string, string>;
}

interface Analysis {
  readonly findings: ShellFinding[];
  readonly unknown: ShellFinding[];
  readonly exfiltration: ShellFinding[];
  readonly outside: ShellFinding[];
  readonly background: ShellFinding[];
  readonly programs: ShellProgram[];
  readonly redirects: ShellWord[];
  readonly seen: Set<string>;
  readonly deadline: number;
  /**
   * The command names `$PLANGATE_OUTPUT` only to read it (never assigns it): a write to it is to
   * the outputs file the harness hands the step, in a directory of its own, not the plan's write.
   */
  readonly outputsFileIntact: boolean;
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
    unknown: [],
    exfiltration: [],
    outside: [],
    background: [],
    programs: [],
    redirects: [],
    seen: new Set(),
    deadline: performance.now() + timeBudgetMs,
    outputsFileIntact: !command.replace(/\$\{?PLANGATE_OUTPUT\}?/g, '').includes('PLANGATE_OUTPUT'),
  };
  const frame: Frame = {
    source: maskReferences(command),
    shown: command,
    depth: 0,
    locate: ({ row, column }) => ({ line: row + 1, column: column + 1 }),
    written: new Map(),
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
  const unknown = Object.freeze(analysis.unknown.sort(byPlace));
  const exfiltration = Object.freeze(analysis.exfiltration.sort(byPlace));
  const outsideWorkspace = Object.freeze(analysis.outside.sort(byPlace));
  const background = Object.freeze(analysis.background.sort(byPlace));
  const effect: ShellEffect =
    destructive.length > 0 ? 'destructive' : unknown.length > 0 ? 'unknown' : 'read-only';
  const programs = Object.freeze(analysis.programs);
  const redirects = Object.freeze(analysis.redirects);
  const found = {
    effect,
    destructive,
    unknown,
    exfiltration,
    outsideWorkspace,
    background,
    programs,
    redirects,
  };
  return Object.freeze(syntaxError ? { syntaxError, ...found } : found);
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
  'variable_assignment',
  'declaration_command',
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
    recordWrittenFiles(nodes, stdin, frame);
    checkBackgroundJobs(tree, nodes, frame, analysis);
    for (const node of nodes) {
      if (node.type === 'command') analyzeCommandNode(node, stdin.get(node.id), frame, analysis);
      else if (node.type === 'file_redirect') checkRedirect(node, frame, analysis);
      else if (node.type === 'variable_assignment') checkAssignment(node, frame, analysis);
      else if (node.type === 'declaration_command') checkDeclaration(node, frame, analysis);
    }
    const candidates = nodes.filter((node) => MISPLACED_WORD_TYPES.has(node.type));
    return firstSyntaxError(tree, frame.source, candidates);
  } finally {
    tree.delete();
  }
}

/** Each `&` job of this text that no `wait` after it collects (a `wait` anywhere later counts). */
function checkBackgroundJobs(tree: Tree, nodes: readonly Node[], frame: Frame, analysis: Analysis): void {
  const waits = nodes
    .filter((node) => node.type === 'command' && node.childForFieldName('name')?.text === 'wait')
    .map((node) => node.startIndex);
  for (const amp of tree.rootNode.descendantsOfType(['&'])) {
    const job = amp?.previousSibling;
    if (!amp || !job || waits.some((at) => at > amp.startIndex)) continue;
    const shown = `${frame.shown.slice(job.startIndex, job.endIndex)} &`;
    report(analysis, frame, job.startPosition, shown, BACKGROUND_JOB, analysis.background);
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
    analysis.programs.push({ name: undefined, raw: nameWord.raw, args });
    flag(`${UNKNOWN}${unknown}`);
    return;
  }
  const name = nameWord.value.slice(nameWord.value.lastIndexOf('/') + 1);
  analysis.programs.push({ name, raw: nameWord.raw, args });
  if (args.length > 0 && args.every((word) => word.value === '--help' || word.value === '--version')) return;
  for (const { word, reason } of outsideWords(name, nameWord, args))
    report(analysis, frame, word.at, shown, reason, analysis.outside);

  const inners = innerCommands(name, args);
  for (const inner of inners) runInner(inner, stdin, shown, frame, analysis, wrapped, nameWord);

  const empties =
    name === 'tee' && !args.some((word) => /^-\w*a|^--append$/.test(word.value ?? '')) && emptyInput(stdin)
      ? 'empties the files it writes (its input is empty)'
      : undefined;
  const sql = TEXT_COMMANDS.has(name)
    ? undefined
    : (args.map((word) => destructiveSql(word.text)).find((found) => found !== undefined) ??
      (stdin.kind === 'text' ? destructiveSql(stdin.text) : undefined));
  const destructive = [destructiveReason(name, args), empties, sql && `runs SQL \`${sql}\``].filter(
    (found): found is string => found !== undefined,
  );
  for (const reason of destructive) flag(reason);
  const detached = detachReason(name, args);
  if (detached) report(analysis, frame, nameWord.at, shown, detached, analysis.background);
  const readsPipe = stdin.kind === 'pipe' || stdin.kind === 'file';
  for (const sent of exfiltrationReasons(name, args, readsPipe))
    report(analysis, frame, nameWord.at, shown, sent, analysis.exfiltration);
  runCode(name, nameWord.value, args, stdin, shown, frame, analysis, nameWord);
  // A command already known destructive needs no second mark saying it is not proven harmless.
  const unproven = destructive.length > 0 ? undefined : ownEffect(name, nameWord.value, args, inners, stdin);
  if (unproven) report(analysis, frame, nameWord.at, shown, unproven, analysis.unknown);
}

/**
 * Why what `name` itself does is not proven read-only (what it runs is judged on its own):
 * undefined for a program on the allow-list with read-only arguments, or a wrapper that adds
 * nothing to the command it runs.
 */
function ownEffect(
  name: string,
  written: string,
  args: readonly ShellWord[],
  inners: readonly Inner[],
  stdin: Stdin,
): string | undefined {
  const wrapper = WRAPPERS.get(name);
  const runsSomething = inners.some((inner) => inner.kind !== 'unknown');
  if (wrapper && runsSomething && !wrapper.isProgram) {
    const readsUnknownInput =
      inners.some((inner) => inner.kind === 'stdin-script') && stdin.kind !== 'text' && stdin.kind !== 'pipe';
    if (readsUnknownInput) return `\`${name}\` runs the commands it reads from its input`;
    return wrapper.adds?.(args);
  }
  const interpreter = INTERPRETERS.get(name);
  if (interpreter) return interpreterReason(name, interpreter, args);
  if (SHELLS.has(name)) {
    const script = scriptOperand(args);
    return script
      ? `\`${name}\` runs the script \`${script.raw}\`, which the plan does not hold`
      : `\`${name}\` runs the commands it reads from its input`;
  }
  if (written.includes('/') && !/^\/(?:usr\/)?s?bin\//.test(written))
    return `runs the program \`${written}\`, which the plan does not hold`;
  return notReadOnlyReason(name, args);
}

/** The first operand of a shell or interpreter: the script file it runs. */
function scriptOperand(args: readonly ShellWord[]): ShellWord | undefined {
  return scanOptions(args, { stopAtOperand: true, longWithValue: ['rcfile', 'init-file'] }).operands[0];
}

/**
 * Code in another language, read for what is plain in it: shell text handed to `system(…)` and
 * the like (parsed again), and calls that delete files. A script file the same command wrote
 * (`printf '…' > x.py && python3 x.py`) is read as its code.
 */
function runCode(
  name: string,
  written: string,
  args: readonly ShellWord[],
  stdin: Stdin,
  shown: string,
  frame: Frame,
  analysis: Analysis,
  nameWord: ShellWord,
): void {
  const interpreter = INTERPRETERS.get(name);
  const awkProgram = /^(?:g|m|n)?awk$/.test(name)
    ? scanOptions(args, { shortWithValue: 'Fvf' }).operands[0]
    : undefined;
  const fileOf = (word: ShellWord | undefined) =>
    word?.value === undefined ? undefined : writtenFile(frame, word.value);
  const programFile = SHELLS.has(name) || interpreter ? fileOf(scriptOperand(args)) : undefined;
  const selfFile = written.includes('/') ? writtenFile(frame, written) : undefined;
  const codes: ShellWord[] = [
    ...(interpreter ? inlineCode(interpreter, args) : []),
    ...(awkProgram ? [awkProgram] : []),
    ...(interpreter && stdin.kind === 'text' && !scriptOperand(args)
      ? [literalWord(stdin.text, stdin.at)]
      : []),
  ];
  const scripts = [programFile, selfFile].filter((text): text is string => text !== undefined);
  if (scripts.length > 0 && (SHELLS.has(name) || !interpreter)) {
    for (const text of scripts)
      analyzeNested(
        text,
        undefined,
        undefined,
        nameWord.at,
        `script written by this command`,
        frame,
        analysis,
      );
  } else codes.push(...scripts.map((text) => literalWord(text, nameWord.at)));
  for (const code of codes) {
    const deletion = codeDeletion(code.text);
    if (deletion) report(analysis, frame, nameWord.at, shown, `runs ${name} code that ${deletion}`);
    for (const text of embeddedShell(code.text, code.at))
      runInner(
        { kind: 'script', words: [text], runner: `${name} code` },
        { kind: 'none' },
        shown,
        frame,
        analysis,
        0,
        nameWord,
      );
  }
}

/** A file this text wrote earlier with known content, by the path a later command names. */
function writtenFile(frame: Frame, path: string): string | undefined {
  return frame.written.get(path.replace(/^\.\//, ''));
}

/** Whether a command's standard input is empty: `: |`, `true |`, `echo -n |`, `< /dev/null`. */
function emptyInput(stdin: Stdin): boolean {
  if (stdin.kind === 'text') return stdin.text === '';
  return stdin.kind === 'pipe' && [':', 'true', 'false'].includes(stdin.from);
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
  } else if (inner.kind === 'unknown') {
    report(analysis, frame, nameWord.at, shown, inner.reason, analysis.unknown);
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
  const nested: Frame = { source: text, shown, depth: frame.depth + 1, locate, written: frame.written };
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

/** Devices a redirect may write to without changing anything. */
const HARMLESS_SINKS = /^\/dev\/(?:null|stdout|stderr|tty|fd\/[0-2])$/;
/** `"$PLANGATE_OUTPUT"`, `${PLANGATE_OUTPUT}`: the destination is the outputs file, whole. */
const OUTPUTS_FILE = /^(?:"\$\{?PLANGATE_OUTPUT\}?"|\$\{?PLANGATE_OUTPUT\}?)$/;

/**
 * A redirect: writing to a disk device (`> /dev/sda`) is destructive, and so is emptying a file
 * (`: > f`, `> f`, `cat /dev/null > f`); any other write is an ordinary one, whose effect is
 * unknown (a read-only command writes only to /dev/null or a descriptor). A redirect's file
 * outside the workspace (`< /etc/passwd`, `> ~/x`) is marked as such; a network socket or a
 * credential file read is an exfiltration risk.
 */
function checkRedirect(node: Node, frame: Frame, analysis: Analysis): void {
  const operator = node.children.find((child) => child !== null && !child.isNamed)?.type ?? '';
  const destination = node.childForFieldName('destination');
  if (!destination) return;
  const word = wordOf(destination, frame.source, frame.shown);
  analysis.redirects.push(word);
  const at = { row: node.startPosition.row, column: node.startPosition.column };
  const statement = redirectedStatement(node);
  const shown = frame.shown.slice((statement ?? node).startIndex, (statement ?? node).endIndex);
  const target = word.value;
  // `2>&1`, `>&2`, `<&0`, `>&-`: a descriptor, not a file.
  if (/&$/.test(operator) && (destination.type === 'number' || target === '-' || /^\d+$/.test(target ?? '')))
    return;
  const writes = operator.includes('>');
  const sent = redirectExfiltration(operator, word);
  if (sent) report(analysis, frame, word.at, shown, sent, analysis.exfiltration);
  if (writes && target !== undefined && isBlockDevice(target))
    report(analysis, frame, at, shown, `writes to the block device ${target}`);
  else if (writes && analysis.outputsFileIntact && OUTPUTS_FILE.test(word.raw)) {
    // The harness's outputs file: what the step reports, not a change it makes.
  } else if (writes && !(target !== undefined && HARMLESS_SINKS.test(target))) {
    const file = word.raw;
    // The grammar hangs `a && : > f`'s redirect on the whole list; bash applies it to the last command.
    const body = statement?.childForFieldName('body') ?? null;
    if ((operator === '>' || operator === '>|') && writesNothing(body && (lastCommand(body) ?? body), frame))
      report(analysis, frame, at, shown, `empties \`${file}\``);
    else report(analysis, frame, word.at, shown, `writes \`${file}\``, analysis.unknown);
  }
  if (operator.includes('&')) return;
  const outside = outsideRedirect(word);
  if (outside) report(analysis, frame, word.at, shown, outside, analysis.outside);
}

/** The statement a redirect belongs to (a heredoc's redirect hangs one level deeper). */
function redirectedStatement(node: Node): Node | null {
  let current = node.parent;
  while (current && current.type === 'heredoc_redirect') current = current.parent;
  return current?.type === 'redirected_statement' ? current : null;
}

/** A statement that writes nothing: none (`> f`), `:`, `true`, `false`, `cat /dev/null`, `echo -n`, `printf ''`. */
function writesNothing(body: Node | null, frame: Frame): boolean {
  if (!body) return true;
  if (body.type !== 'command') return false;
  const name = body.childForFieldName('name');
  const words = [name?.firstNamedChild ?? name, ...body.childrenForFieldName('argument')]
    .filter((n): n is Node => n !== null)
    .map((n) => wordOf(n, frame.source, frame.shown).value);
  const [command, ...args] = words;
  if (command === ':' || command === 'true' || command === 'false') return true;
  if (command === 'cat') return args.length > 0 && args.every((arg) => arg === '/dev/null');
  if (command === 'echo') return args.length === 1 && args[0] === '-n';
  if (command === 'printf') return args.length === 1 && args[0] === '';
  return false;
}

/** `PATH=./bin cmd`, `export BASH_ENV=x`, `LD_PRELOAD=… ls`: a variable that changes what runs. */
function checkAssignment(node: Node, frame: Frame, analysis: Analysis): void {
  const name = node.childForFieldName('name');
  if (!name) return;
  const reason = settingReason(frame.source.slice(name.startIndex, name.endIndex));
  if (!reason) return;
  const statement = node.parent ?? node;
  const shown = frame.shown.slice(statement.startIndex, statement.endIndex);
  report(
    analysis,
    frame,
    { row: node.startPosition.row, column: node.startPosition.column },
    shown,
    reason,
    analysis.unknown,
  );
}

/**
 * `declare`/`export`/`local`/`readonly`/`typeset` with a name known only at run time
 * (`declare "${X}TH=./bin"`) or a nameref (`-n`): what it sets cannot be told, so neither can
 * what runs after it. Literal `NAME=…` assignments are read by checkAssignment.
 */
function checkDeclaration(node: Node, frame: Frame, analysis: Analysis): void {
  for (const child of node.namedChildren) {
    if (!child || child.type === 'variable_assignment' || child.type === 'variable_name') continue;
    const text = frame.source.slice(child.startIndex, child.endIndex);
    const reason = /^-[A-Za-z]*n/.test(text)
      ? 'declares a nameref (-n), whose target is known only at run time'
      : child.type === 'word' && /^[-+]?[A-Za-z_][A-Za-z0-9_]*$/.test(text)
        ? undefined
        : `declares \`${text}\`, a variable whose name is known only at run time, which may change what runs`;
    if (!reason) continue;
    report(
      analysis,
      frame,
      { row: node.startPosition.row, column: node.startPosition.column },
      frame.shown.slice(node.startIndex, node.endIndex),
      reason,
      analysis.unknown,
    );
  }
}

/**
 * Files written with known content (`printf 'rm -rf x' > c.sh`, `cat > c.sh <<EOF`), so that a
 * later `bash c.sh` or `./c.sh` in the same text is read as what it runs.
 */
function recordWrittenFiles(nodes: readonly Node[], stdin: Map<number, Stdin>, frame: Frame): void {
  for (const node of nodes) {
    if (node.type !== 'redirected_statement') continue;
    const body = node.childForFieldName('body');
    if (body?.type !== 'command') continue;
    const redirects = node
      .childrenForFieldName('redirect')
      .flatMap((r) =>
        r?.type === 'heredoc_redirect' ? r.children.filter((c) => c?.type === 'file_redirect') : [r],
      );
    for (const redirect of redirects) {
      if (redirect?.type !== 'file_redirect') continue;
      const operator = redirect.children.find((child) => child !== null && !child.isNamed)?.type ?? '';
      const destination = redirect.childForFieldName('destination');
      if (!destination || !(operator === '>' || operator === '>>' || operator === '>|')) continue;
      const path = wordOf(destination, frame.source, frame.shown).value;
      const output = outputOf(body, stdin, frame);
      if (path !== undefined && output.kind === 'text') {
        const key = path.replace(/^\.\//, '');
        frame.written.set(
          key,
          operator === '>>' ? `${frame.written.get(key) ?? ''}\n${output.text}` : output.text,
        );
      }
    }
  }
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
