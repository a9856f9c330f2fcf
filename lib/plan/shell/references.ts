/**
 * Where each plan reference (`${steps.…}`, `${context.…}`, `${secrets.…}`) sits in a shell
 * command, and whether the harness can hand its value to bash there as data. The harness never
 * pastes a value into the text: it puts the value in an environment variable `PLANGATE_VALUE_n`
 * and writes a reference to that variable where the plan reference was:
 *
 * - `quoted`: inside a double-quoted string (`echo "id=${steps.a.id}"`), written `${PLANGATE_VALUE_n}`;
 * - `word`: an unquoted part of an argument, an assignment's value or a redirect's file
 *   (`cat ${steps.a.file}`), written `"${PLANGATE_VALUE_n}"`: one word, never split or globbed.
 *
 * Every other place is refused, with the reason and how to write it instead: where bash, or a
 * program the command starts, would read the value as code (the command name, `eval`/`bash -c`
 * text, arithmetic, variable names, patterns, here-documents, a pipe into a shell …) or would not
 * expand it at all (single quotes). The walk is fail-closed: a place it does not positively
 * recognise as one of the two is refused. docs/shell-analysis.md says the rules in prose.
 */
import type { Node } from 'web-tree-sitter';
import { analyzeShell, maskReferences, PLAN_REFERENCE } from './analyze.ts';
import { parseBash } from './grammar.ts';
import { type ShellWord, wordOf } from './words.ts';
import { innerCommands, SHELLS } from './wrappers.ts';

interface PlaceBase {
  /** The reference as written, e.g. `${steps.build.dir}`. */
  readonly raw: string;
  /** UTF-16 offsets of the reference in the command (end exclusive). */
  readonly start: number;
  readonly end: number;
  /** 1-based, UTF-16 columns (as editors count). */
  readonly line: number;
  readonly column: number;
}

/** A place the harness fills with a variable holding the value (see the module comment). */
export interface ShellReferenceFilled extends PlaceBase {
  readonly placement: 'quoted' | 'word';
  readonly refused?: undefined;
}

/** A place where the value would be read as code, or not expanded: refused, saying how to write it. */
export interface ShellReferenceRefused extends PlaceBase {
  readonly placement?: undefined;
  readonly refused: string;
}

export type ShellReferencePlace = ShellReferenceFilled | ShellReferenceRefused;

const PARSE_BUDGET_MS = 2_000;
/** Wrappers (`sudo env nice …`) followed at most this deep. */
const MAX_WRAPPERS = 32;

const HOW = 'pass it through `env:` (e.g. `env: {NAME: "${…}"}`) and read it as the variable "$NAME"';

const REASONS = {
  commandName:
    'is in command-name position: a value must never choose what runs; name the command in the plan (a `case` on the value can pick among fixed commands)',
  unknownCommand:
    'is an argument of a command whose name is known only at run time; name the command in the plan',
  singleQuotes: `is inside single quotes, where the shell does not expand it; put it in double quotes ("…") instead`,
  ansiC: `is inside $'…', where the shell does not expand it; put it in double quotes ("…") instead`,
  heredoc: `is inside a here-document or here-string; ${HOW}, or write it with printf '%s' "…" | …`,
  backticks: 'is inside backticks; use $(…) instead, with the reference in double quotes',
  unquotedSubstitution:
    'is inside a $(…) whose output the shell splits and globs; put the $(…) in double quotes ("$(…)")',
  processSubstitution: `is inside a process substitution <(…), whose output a command reads as a file; ${HOW}`,
  arithmetic:
    'is in an arithmetic context, where bash evaluates the value as an expression (which can run commands); compare it as a string ([[ "…" == 42 ]]) or check it is a number first',
  subscript:
    'is an array subscript, which bash evaluates as arithmetic (which can run commands); use a fixed subscript and the value as the element',
  variableName: `names a variable: bash evaluates subscripts in variable names (which can run commands); assign the value instead (NAME="…")`,
  casePattern:
    'is a case pattern; put the value in the case subject (case "…" in) or compare with [[ "$x" == "…" ]]',
  parameterOperator:
    'is inside the ${…} of a shell variable; give it its own place first (X="…"), then use "${V:-$X}"',
  comment: 'is inside a comment; remove it or write it where the command uses it',
  escaped: 'is escaped or not expanded by the shell here; write it as "${…}" in double quotes',
  invalid: 'cannot be placed: the command is not valid shell',
  tooComplex: 'cannot be placed: the command is too complex to analyse in time',
  wrapperArgument: `is an argument of a wrapper that runs another command (a value starting with "-" would change what it runs); write it as a literal, or ${HOW}`,
  testName:
    'is the operand of -v or -R, which names a variable (bash evaluates its subscript, which can run commands); test a fixed variable name',
  testArithmetic:
    'is an operand of -eq/-ne/-lt/-le/-gt/-ge in [[ ]], which bash evaluates as arithmetic (which can run commands); compare it as a string ([[ "…" == 42 ]]) or use [ … -eq … ]',
  other: `is in a place the harness does not recognise as data; put it in double quotes as an argument ("…"), or ${HOW}`,
  jq: 'is in a jq command outside --arg/--argjson values: jq reads its filter as a program; pass it as `--arg name "${…}"` and read $name in the filter',
  printfVariable:
    'is the variable name of printf -v: bash evaluates subscripts in variable names (which can run commands); use a fixed name',
} as const;

const runsAsCode = (what: string): string =>
  `is in text that ${what} runs as code; pass it through \`env:\` (e.g. \`env: {NAME: "\${…}"}\`) and read the variable there ("$NAME" in shell, os.environ in python, process.env in node, ENVIRON in awk)`;

/**
 * Commands whose arguments are (or may be) run as code, or name variables, or change what runs:
 * no reference in any of their arguments.
 */
const CODE_RUNNERS: ReadonlyMap<string, string> = new Map([
  ...[
    'eval',
    'source',
    '.',
    'alias',
    'trap',
    'watch',
    'let',
    'enable',
    'complete',
    'compgen',
    'bind',
    'fc',
  ].map((name) => [name, runsAsCode(`\`${name}\``)] as const),
  ...['make', 'gmake'].map(
    (name) =>
      [
        name,
        `is an argument of \`${name}\`, which expands $(…) in its arguments (\`$(shell …)\` runs commands); ${HOW}`,
      ] as const,
  ),
  ...['xargs', 'parallel', 'find', 'ssh', 'su', 'runuser', 'expect', 'hash'].map(
    (name) =>
      [name, `is an argument of \`${name}\`, which runs commands built from its arguments; ${HOW}`] as const,
  ),
  ...[
    'read',
    'mapfile',
    'readarray',
    'getopts',
    'unset',
    'declare',
    'typeset',
    'local',
    'export',
    'readonly',
  ].map((name) => [name, REASONS.variableName] as const),
]);

/** Programs that run a script: a reference may only be an argument after the script file, with no option before it. */
const INTERPRETERS: ReadonlySet<string> = new Set([
  ...SHELLS,
  'python',
  'python2',
  'python3',
  'pypy',
  'pypy3',
  'node',
  'nodejs',
  'deno',
  'bun',
  'perl',
  'ruby',
  'php',
  'lua',
  'Rscript',
  'tclsh',
  'pwsh',
  'osascript',
]);

/** awk: its program is the first operand (unless -f/-e/… name program files); the operands after it are data. */
const AWKS: ReadonlySet<string> = new Set(['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk']);
const AWK_PROGRAM_OPTIONS = /^-(?:f|e|E|i|l|-file|-source|-exec|-include|-load)/;

/**
 * Programs that read an argument starting with "-" as an option wherever it stands (GNU argument
 * permutation), where some option runs a command (`sed --expression=e…`, `tar --to-command=…`,
 * `sort --compress-program=…`, `git --upload-pack=…`): a reference only after a literal `--`.
 */
const OPTIONS_RUN_CODE: ReadonlySet<string> = new Set([
  'sed',
  'gsed',
  'tar',
  'gtar',
  'rsync',
  'scp',
  'sftp',
  'git',
  'zip',
  'sort',
  'wget',
  'man',
  'less',
  'more',
  'vi',
  'vim',
  'nvim',
  'emacs',
  'gdb',
]);

/** Commands that read standard input as code when a value is piped into them. */
const STDIN_CODE_READERS: ReadonlySet<string> = new Set([
  ...INTERPRETERS,
  ...CODE_RUNNERS.keys(),
  'at',
  'batch',
  'crontab',
]);

/**
 * Environment names that make bash, the dynamic loader or an interpreter run code (or change
 * which program a name runs): a plan may not set them from a step's `env:`, nor assign a
 * reference to them in a command. `PLANGATE_*` are the harness's own.
 */
const CODE_RUNNING_ENV =
  /^(?:BASH_ENV|ENV|SHELLOPTS|BASHOPTS|BASH_XTRACEFD|PS[0-4]|PROMPT_COMMAND|BASH_FUNC_.*|BASH_LOADABLES_PATH|IFS|PATH|CDPATH|GLOBIGNORE|EXECIGNORE|LD_.*|DYLD_.*|GCONV_PATH|LOCPATH|HOSTALIASES|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PYTHONUSERBASE|PYTHONINSPECT|PYTHONBREAKPOINT|NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|PERL5OPT|PERL5LIB|PERLLIB|PERL5DB|RUBYOPT|RUBYLIB|LUA_INIT.*|LUA_PATH.*|LUA_CPATH.*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH|GIT_.*|SSH_ASKPASS|SUDO_ASKPASS|EDITOR|VISUAL|PAGER|MANPAGER|LESSOPEN|LESSCLOSE|BROWSER|PLANGATE_.*)$/;

/**
 * Why an environment variable of this name must not be set by a plan (it makes bash, the loader
 * or an interpreter run code, or is the harness's), or undefined when it may.
 */
export function codeRunningEnvName(name: string): string | undefined {
  if (!CODE_RUNNING_ENV.test(name)) return undefined;
  return name.startsWith('PLANGATE_')
    ? `${name} is the harness's own variable; use another name`
    : `${name} makes bash, the dynamic loader or an interpreter run code (or chooses what a command name runs), so a plan may not set it; use another name`;
}

/** Where each plan reference in `command` sits and how the harness fills it in (see the module comment). Never throws. */
export function placeShellReferences(command: string): ShellReferencePlace[] {
  const found = [...command.matchAll(PLAN_REFERENCE)];
  if (found.length === 0) return [];
  const source = maskReferences(command);
  const starts = lineStarts(command);
  const base = (match: RegExpMatchArray): PlaceBase => {
    const start = match.index ?? 0;
    let line = 0;
    while (line + 1 < starts.length && starts[line + 1]! <= start) line++;
    return {
      raw: match[0],
      start,
      end: start + match[0].length,
      line: line + 1,
      column: start - starts[line]! + 1,
    };
  };
  const tree = parseBash(source, performance.now() + PARSE_BUDGET_MS);
  if (!tree) return found.map((match) => ({ ...base(match), refused: REASONS.tooComplex }));
  try {
    const whole = analyzeShell(command).syntaxError ? REASONS.invalid : wholeCommandRefusal(tree.rootNode);
    const walk = new Walk(source, functionNames(tree.rootNode, source));
    return found.map((match): ShellReferencePlace => {
      const at = base(match);
      if (whole) return { ...at, refused: whole };
      let verdict: Verdict;
      try {
        verdict = walk.place(tree.rootNode.descendantForIndex(at.start, at.end), at.start, at.end);
      } catch (error) {
        // A bug in the walk must not let a value through as data.
        verdict = { refused: `cannot be placed: the analysis failed (${String(error)})` };
      }
      return 'placement' in verdict
        ? { ...at, placement: verdict.placement }
        : { ...at, refused: verdict.refused };
    });
  } finally {
    tree.delete();
  }
}

type Verdict = { readonly placement: 'quoted' | 'word' } | { readonly refused: string };
/** Why a place is refused; undefined when the value is data there. */
type Refusal = string | undefined;

/** Statement containers a command may sit in without its words becoming anything but arguments. */
const TRANSPARENT: ReadonlySet<string> = new Set([
  'program',
  'list',
  'compound_statement',
  'subshell',
  'if_statement',
  'elif_clause',
  'else_clause',
  'while_statement',
  'do_group',
  'function_definition',
  'negated_command',
  'redirected_statement',
]);

const TEST_STRING_OPERATORS: ReadonlySet<string> = new Set(['=', '==', '!=', '<', '>', '=~']);
const TEST_LOGIC: ReadonlySet<string> = new Set(['&&', '||', '-a', '-o']);

/** What refuses every reference of a command: it does not parse, or it writes into `>(…)`, which may run what it reads. */
function wholeCommandRefusal(root: Node): string | undefined {
  if (root.hasError) return REASONS.invalid;
  const writesIntoSubstitution = root
    .descendantsOfType('process_substitution')
    .some((node) => node?.firstChild?.type === '>(');
  return writesIntoSubstitution
    ? `cannot be placed: the command writes into a process substitution >(…), which may run what it reads; ${HOW}`
    : undefined;
}

/** Functions the command defines: what they run with their arguments and input is not seen through. */
function functionNames(root: Node, source: string): ReadonlySet<string> {
  return new Set(
    root
      .descendantsOfType('function_definition')
      .map((node) => node?.childForFieldName('name'))
      .filter((name): name is Node => name != null)
      .map((name) => source.slice(name.startIndex, name.endIndex)),
  );
}

class Walk {
  constructor(
    private readonly source: string,
    private readonly functions: ReadonlySet<string>,
  ) {}

  private text(node: Node): string {
    return this.source.slice(node.startIndex, node.endIndex);
  }

  /** `node`: the smallest node spanning the reference. */
  place(node: Node | null, start: number, end: number): Verdict {
    if (!node) return { refused: REASONS.other };
    if (node.type !== 'expansion' || node.startIndex !== start || node.endIndex !== end) {
      for (let n: Node | null = node; n; n = n.parent) {
        if (n.type === 'raw_string') return { refused: REASONS.singleQuotes };
        if (n.type === 'ansi_c_string') return { refused: REASONS.ansiC };
        if (n.type === 'heredoc_body' || n.type === 'heredoc_redirect' || n.type === 'herestring_redirect')
          return { refused: REASONS.heredoc };
        if (n.type === 'comment') return { refused: REASONS.comment };
        if (n.type === 'expansion') return { refused: REASONS.parameterOperator };
      }
      return { refused: REASONS.escaped };
    }
    for (let n = node.parent; n; n = n.parent)
      if (n.type === 'command_substitution' && n.firstChild?.type === '`')
        return { refused: REASONS.backticks };
    const parent = node.parent;
    if (!parent) return { refused: REASONS.other };
    if (parent.type === 'string') {
      const refused = this.word(this.lift(parent));
      return refused === undefined ? { placement: 'quoted' } : { refused };
    }
    const refused = this.word(this.lift(node));
    return refused === undefined ? { placement: 'word' } : { refused };
  }

  /** A string or expansion that is part of a longer word (`--name="…"`, `x${…}y`): the whole word. */
  private lift(node: Node): Node {
    return node.parent?.type === 'concatenation' ? node.parent : node;
  }

  /** Whether the word `word` (holding the value) is data where it stands. */
  private word(word: Node): Refusal {
    const parent = word.parent;
    if (!parent) return REASONS.other;
    const field = fieldOf(word);
    switch (parent.type) {
      case 'command':
        if (field !== 'argument') return REASONS.other;
        return this.argument(parent, word);
      case 'command_name':
        return REASONS.commandName;
      case 'variable_assignment': {
        if (field !== 'value') return REASONS.other;
        const name = parent.childForFieldName('name');
        if (name?.type !== 'variable_name') return REASONS.subscript;
        const envProblem = codeRunningEnvName(this.text(name));
        if (envProblem) return `is assigned to a variable that may not hold it: ${envProblem}`;
        const holder = parent.parent;
        if (holder?.type === 'command') return this.statement(holder);
        if (holder?.type === 'declaration_command') return this.declaration(holder);
        return this.statement(parent);
      }
      case 'file_redirect':
        return field === 'destination' && parent.parent ? this.statement(parent.parent) : REASONS.other;
      case 'heredoc_body':
      case 'heredoc_redirect':
      case 'herestring_redirect':
        return REASONS.heredoc;
      case 'declaration_command':
      case 'unset_command':
        return REASONS.variableName;
      case 'subscript':
        return REASONS.subscript;
      case 'case_statement':
        return field === 'value' ? this.statement(parent) : REASONS.other;
      case 'case_item':
        return REASONS.casePattern;
      case 'expansion':
        return REASONS.parameterOperator;
      case 'arithmetic_expansion':
      case 'compound_statement':
        return REASONS.arithmetic;
      case 'test_command':
        return this.statement(parent);
      case 'binary_expression':
      case 'unary_expression':
      case 'parenthesized_expression':
        return this.test(word);
      case 'array':
        return 'is an element of an array assignment; assign it to a plain variable (X="…") and use "$X"';
      default:
        return REASONS.other;
    }
  }

  /** A word in a test expression: only `[[ ]]`/`[ ]` string comparisons and file tests (not `-v`, not arithmetic). */
  private test(word: Node): Refusal {
    const expression = word.parent!;
    const operator = this.text(
      expression.childForFieldName('operator') ?? expression.firstChild ?? expression,
    );
    if (expression.type === 'binary_expression' && !TEST_STRING_OPERATORS.has(operator))
      return /^-(?:eq|ne|lt|le|gt|ge)$/.test(operator) ? REASONS.testArithmetic : REASONS.arithmetic;
    if (expression.type === 'unary_expression' && !/^-[a-zA-Z]$/.test(operator)) return REASONS.arithmetic;
    if (expression.type === 'unary_expression' && (operator === '-v' || operator === '-R'))
      return REASONS.testName;
    // Up through && / || / ! / ( … ) to the test command: anything else is arithmetic (`(( … ))`, `$(( … ))`).
    let current = expression;
    for (;;) {
      const parent = current.parent;
      if (!parent) return REASONS.arithmetic;
      if (parent.type === 'test_command') return this.statement(parent);
      const logic = this.text(parent.childForFieldName('operator') ?? parent.firstChild ?? parent);
      const joins =
        (parent.type === 'binary_expression' && TEST_LOGIC.has(logic)) ||
        (parent.type === 'unary_expression' && logic === '!') ||
        parent.type === 'parenthesized_expression';
      if (!joins) return REASONS.arithmetic;
      current = parent;
    }
  }

  /** `declare`/`export`/`local`/`readonly`/`typeset` NAME="…": data, unless `-n` makes NAME a reference to the value. */
  private declaration(node: Node): Refusal {
    for (const child of node.namedChildren)
      if (child?.type === 'word' && /^[-+][A-Za-z]*n/.test(this.text(child)))
        return 'is assigned to a nameref (declare -n), which reads the value as a variable name (bash evaluates its subscript, which can run commands); assign without -n';
    return this.statement(node);
  }

  /** An argument of a command: data unless the command (seen through wrappers) runs it as code. */
  private argument(command: Node, target: Node): Refusal {
    const name = command.childForFieldName('name');
    const nameNode = name?.firstNamedChild ?? name;
    if (!nameNode) return REASONS.other;
    const nodes = [nameNode, ...command.childrenForFieldName('argument')].filter(
      (n): n is Node => n !== null,
    );
    const words = nodes.map((n) => this.view(n));
    const targetWord = words[nodes.findIndex((n) => n.id === target.id)];
    if (!targetWord) return REASONS.other;
    const inner = this.call(words, targetWord, 0);
    return inner ?? this.statement(command);
  }

  /**
   * A word as the wrappers' option scanning should read it: a word holding a reference counts as
   * known (its text), so `env X="${…}" cmd` is an assignment and not a command name.
   */
  private view(node: Node): ShellWord & { readonly known: boolean } {
    const word = wordOf(node, this.source);
    const holdsReference = /\$\{(?:steps|context|secrets)_/.test(word.text);
    return {
      ...word,
      value: word.value ?? (holdsReference ? word.text : undefined),
      known: word.value !== undefined,
    };
  }

  /** The refusal for `target` in the command line `words`, or undefined when it is plain data there. */
  private call(
    words: readonly (ShellWord & { readonly known?: boolean })[],
    target: ShellWord,
    wrapped: number,
  ): Refusal {
    const [nameWord, ...args] = words;
    if (!nameWord) return REASONS.other;
    if (nameWord === target) return REASONS.commandName;
    if (nameWord.known === false || nameWord.value === undefined || nameWord.pattern)
      return REASONS.unknownCommand;
    if (wrapped > MAX_WRAPPERS) return REASONS.other;
    const name = nameWord.value.slice(nameWord.value.lastIndexOf('/') + 1);
    const index = args.indexOf(target);
    const code = CODE_RUNNERS.get(name);
    if (code) return code;
    if (this.functions.has(name))
      return `is an argument of \`${name}\`, a function this command defines, which the harness does not see through; ${HOW}`;
    let wraps = false;
    for (const inner of innerCommands(name, args)) {
      if (inner.kind === 'opaque') return runsAsCode(`\`${name}\``);
      if (inner.kind === 'stdin-script') continue;
      if (!inner.words.includes(target)) {
        wraps ||= inner.kind === 'command';
        continue;
      }
      if (inner.kind === 'script') return runsAsCode(`\`${inner.runner}\``);
      return this.call(inner.words, target, wrapped + 1);
    }
    // An argument of the wrapper itself (`timeout 5 …`, `env X=… …`): only an assignment's value.
    if (wraps) {
      const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(target.text);
      if (!assignment) return REASONS.wrapperArgument;
      const envProblem = codeRunningEnvName(assignment[1]!);
      return envProblem ? `is assigned to a variable that may not hold it: ${envProblem}` : undefined;
    }
    if (INTERPRETERS.has(name)) return this.interpreterArgument(name, args, index);
    if (AWKS.has(name)) {
      const program = args.findIndex((word) => !word.value?.startsWith('-') || word.known === false);
      const fromFiles = args
        .slice(0, Math.max(program, 0))
        .some((word) => AWK_PROGRAM_OPTIONS.test(word.value ?? ''));
      return program !== -1 && index > program && !fromFiles && args[program]!.known !== false
        ? undefined
        : `is in the program of \`${name}\` (or before it), which awk runs as code; pass it through \`env:\` and read ENVIRON["NAME"] in the program, or give it as an operand after the program`;
    }
    if (OPTIONS_RUN_CODE.has(name)) {
      const dashes = args.findIndex((word) => word.value === '--');
      const isOption = (word: ShellWord, i: number) =>
        (dashes === -1 || i < dashes) && word.value?.startsWith('-') === true && word.value !== '-';
      // sed's program is its first operand, unless -e/-f give it.
      const sedProgram =
        (name === 'sed' || name === 'gsed') &&
        !args.some(
          (word, i) => isOption(word, i) && /^-(?:[^-]*[ef]|-expression|-file)/.test(word.value ?? ''),
        ) &&
        args.findIndex((word, i) => i !== dashes && !isOption(word, i)) === index;
      // A word that starts with literal text (`./${…}`, `TAG=${…}`) is never read as an option; but
      // it may be the value of the option before it (`rsync -e "ssh ${…}"`, `git -c "core.x=${…}"`).
      const plainOperand =
        /^[^-+$]/.test(target.text) && !/^[-+]./.test(args[index - 1]?.value ?? args[index - 1]?.text ?? '');
      return ((dashes !== -1 && dashes < index) || plainOperand) && !sedProgram
        ? undefined
        : `is an argument of \`${name}\`, which reads a value starting with "-" as an option wherever it stands, and some of its options run commands (as may an option's value); write it after a literal \`--\` (\`${name} … -- "\${…}"\`), or ${HOW}`;
    }
    if (name === 'jq') {
      const option = args[index - 2]?.value;
      return option === '--arg' || option === '--argjson' ? undefined : REASONS.jq;
    }
    const before = args[index - 1]?.value;
    if (name === 'printf' && (before === '-v' || /^-v./.test(target.text))) return REASONS.printfVariable;
    if ((name === 'test' || name === '[') && (before === '-v' || before === '-R')) return REASONS.testName;
    return undefined;
  }

  /**
   * An argument of a program that runs a script: data after the script file (`python3 s.py "…"`),
   * after a shell's or python's `-c` text (its positional arguments), or after a literal `--`
   * that follows the code (`node -e '…' -- "…"`: before it, node, perl and ruby read a value
   * starting with "-" as an option, and some options run code).
   */
  private interpreterArgument(
    name: string,
    args: readonly (ShellWord & { known?: boolean })[],
    index: number,
  ): Refusal {
    const literal = (word: ShellWord & { known?: boolean }) =>
      word.known !== false && word.value !== undefined;
    const before = args.slice(0, index);
    if (index === 0)
      return `names the script \`${name}\` runs: a value must never choose what runs; name the script in the plan`;
    if (before.every(literal)) {
      const script = args[0]!;
      if (!/^[-+]/.test(script.value ?? '')) return undefined;
      if (before.some((word, i) => word.value === '--' && i > 0)) return undefined;
      const code = args.findIndex((word) => /^-[A-Za-z]*c$/.test(word.value ?? ''));
      if ((SHELLS.has(name) || name.startsWith('python')) && code !== -1 && index > code + 1)
        return undefined;
    }
    return `is an argument of \`${name}\` where it may be read as code or as an option that runs code; give it after the script file, or after a literal \`--\` that follows the code (\`${name} -e '…' -- "\${…}"\`), or ${HOW}`;
  }

  /** A statement holding the value as data: what contains it must keep it so (pipes into shells, unquoted `$(…)`). */
  private statement(node: Node): Refusal {
    let current = node;
    for (;;) {
      const parent = current.parent;
      if (!parent) return undefined;
      if (TRANSPARENT.has(parent.type)) {
        current = parent;
        continue;
      }
      switch (parent.type) {
        case 'for_statement':
        case 'case_item':
          if (fieldOf(current) === 'value') return REASONS.other;
          current = parent;
          continue;
        case 'pipeline': {
          const problem = this.pipedInto(parent, current);
          if (problem) return problem;
          current = parent;
          continue;
        }
        case 'command_substitution': {
          if (parent.firstChild?.type === '`') return REASONS.backticks;
          // What `$(…)` prints is a value too: it must be quoted where it lands, or be an assignment's value (never split).
          if (parent.parent?.type === 'string') return this.word(this.lift(parent.parent));
          const word = this.lift(parent);
          if (word.parent?.type === 'variable_assignment' && fieldOf(word) === 'value')
            return this.word(word);
          return REASONS.unquotedSubstitution;
        }
        case 'process_substitution':
          return REASONS.processSubstitution;
        case 'heredoc_redirect':
        case 'herestring_redirect':
          return REASONS.heredoc;
        default:
          return REASONS.other;
      }
    }
  }

  /** A value written into a pipe whose later stage runs what it reads (`… | bash`, `… | xargs …`). */
  private pipedInto(pipeline: Node, stage: Node): Refusal {
    const stages = pipeline.namedChildren.filter((n): n is Node => n !== null);
    const at = stages.findIndex((n) => n.id === stage.id);
    for (const later of stages.slice(at + 1)) {
      if (later.type !== 'command')
        return `is written into a pipe read by \`${this.text(later).slice(0, 40)}\`, which the harness cannot see through; ${HOW}`;
      const reader = this.reader(later);
      if (reader === undefined || STDIN_CODE_READERS.has(reader) || this.functions.has(reader))
        return `is written into a pipe read by \`${reader ?? this.text(later).slice(0, 40)}\`, which may run what it reads as code; ${HOW}`;
    }
    return undefined;
  }

  /** The program that reads a pipeline stage's input, seen through wrappers; undefined when unknown. */
  private reader(command: Node): string | undefined {
    const name = command.childForFieldName('name');
    const nameNode = name?.firstNamedChild ?? name;
    if (!nameNode) return undefined;
    let words: readonly ShellWord[] = [nameNode, ...command.childrenForFieldName('argument')]
      .filter((n): n is Node => n !== null)
      .map((n) => wordOf(n, this.source));
    for (let depth = 0; depth <= MAX_WRAPPERS; depth++) {
      const [first, ...args] = words;
      if (first?.value === undefined || first.pattern) return undefined;
      const program = first.value.slice(first.value.lastIndexOf('/') + 1);
      if (STDIN_CODE_READERS.has(program)) return program;
      const inner = innerCommands(program, args).find((i) => i.kind === 'command');
      if (inner?.kind !== 'command') return program;
      words = inner.words;
    }
    return undefined;
  }
}

function fieldOf(node: Node): string | null {
  const parent = node.parent;
  if (!parent) return null;
  for (let i = 0; i < parent.childCount; i++)
    if (parent.child(i)?.id === node.id) return parent.fieldNameForChild(i);
  return null;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}
