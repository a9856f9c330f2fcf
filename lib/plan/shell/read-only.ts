/**
 * The reviewed allow-list of read-only programs: a command line is proven read-only only when its
 * program is here and its arguments pass the program's check (no option that writes, deletes,
 * sends or runs something). Anything else, an unknown program, a script or code, is "unknown".
 * Redirects, substitutions, wrappers and scripts are accounted for by analyze.ts; this table
 * judges one program with its arguments.
 *
 * One program a line. A check is one of:
 * - `anyArguments`: reviewed, no option of it writes or runs anything (`ls`, `cat`, `grep`);
 * - `without(short, long)`: read-only unless given one of these options (`sort -o` writes);
 * - `onlyOptions({...})`: read-only only with the options listed (`curl`: its read-only options);
 * - a function of its own for programs with subcommands (`git`, `kubectl`, `docker`).
 * tests/plan/shell-tables.test.ts runs every row's example.
 */
import { hasOption, optionValue, type ScannedOptions, scanOptions } from './options.ts';
import { executionVariable } from './variables.ts';
import type { ShellWord } from './words.ts';

/** Why `program args` is not proven read-only; undefined when it is. */
export type ReadOnlyCheck = (args: readonly ShellWord[], name: string) => string | undefined;

/** Reviewed: no option of the program writes, deletes, sends or runs anything. */
export const anyArguments: ReadOnlyCheck = () => undefined;

/** Read-only unless one of the options is given (`shortLetters` take no value unless in `valued`). */
export const without =
  (shortLetters: string, longNames: readonly string[] = [], valued = ''): ReadOnlyCheck =>
  (args, name) => {
    const scanned = scanOptions(args, { shortWithValue: valued });
    const letter = [...shortLetters].find((l) => scanned.short.has(l));
    if (letter) return `\`${name} -${letter}\` writes or runs something`;
    const long = longNames.find((n) => scanned.long.has(n));
    return long ? `\`${name} --${long}\` writes or runs something` : undefined;
  };

export interface OptionList {
  /** Short option letters that take no value. */
  readonly short?: string;
  /** Short option letters that take a value. */
  readonly valued?: string;
  readonly long?: readonly string[];
  /** Long options that take a value (in the next word when not attached with `=`). */
  readonly longValued?: readonly string[];
  /** More to check once every option is on the list. */
  readonly also?: (scanned: ScannedOptions, name: string) => string | undefined;
}

/** Read-only only with the options listed; any other option is not proven harmless. */
export const onlyOptions =
  (list: OptionList): ReadOnlyCheck =>
  (args, name) => {
    const valued = list.valued ?? '';
    const scanned = scanOptions(args, { shortWithValue: valued, longWithValue: list.longValued ?? [] });
    const allowedShort = `${list.short ?? ''}${valued}`;
    const letter = [...scanned.short].find((l) => !allowedShort.includes(l));
    if (letter) return `\`${name} -${letter}\` is not on the list of its read-only options`;
    const allowedLong = new Set([...(list.long ?? []), ...(list.longValued ?? [])]);
    const long = [...scanned.long.keys()].find((n) => !allowedLong.has(n));
    if (long !== undefined) return `\`${name} --${long}\` is not on the list of its read-only options`;
    return list.also?.(scanned, name);
  };

/** At most `n` operands: the next one would be a file it writes (`uniq in out`, `xxd in out`). */
const operandsAtMost =
  (n: number, check: ReadOnlyCheck = anyArguments, valued = ''): ReadOnlyCheck =>
  (args, name) =>
    check(args, name) ??
    (scanOptions(args, { shortWithValue: valued }).operands.length > n
      ? `\`${name}\` writes its operand after the ${n === 1 ? 'first' : `${n}th`}`
      : undefined);

const values = (words: readonly ShellWord[]): string[] => words.map((word) => word.value ?? '');

/** `read VAR` and `printf -v VAR` assign: harmless unless the variable changes what runs. */
const assigns =
  (valued: string): ReadOnlyCheck =>
  (args, name) => {
    const scanned = scanOptions(args, { shortWithValue: valued });
    const names = name === 'read' ? values(scanned.operands) : [optionValue(scanned, 'v')?.value ?? ''];
    const set = names.find((variable) => executionVariable(variable) !== undefined);
    return set === undefined ? undefined : `\`${name}\` sets ${set}, which changes what runs`;
  };

/** `date +FORMAT` prints; `date MMDDhhmm` and `date -s` set the clock. */
const date: ReadOnlyCheck = (args) => {
  const scanned = scanOptions(args, { shortWithValue: 'dfrI', longWithValue: ['date', 'file', 'reference'] });
  if (hasOption(scanned, 's', ['set'])) return '`date -s` sets the clock';
  return values(scanned.operands).every((v) => v.startsWith('+'))
    ? undefined
    : '`date` with a time sets the clock';
};

/** `hostname` prints; `hostname NAME` and `hostname -F file` set it. */
const hostname = onlyOptions({
  short: 'sfdaAiIy',
  long: ['short', 'fqdn', 'long', 'domain', 'alias', 'all-fqdns', 'ip-address', 'all-ip-addresses'],
  also: (scanned) => (scanned.operands.length > 0 ? '`hostname NAME` sets the host name' : undefined),
});

/**
 * sed without `-i`, running only `p`, `d`, `q`, `=`, `n` and `s///` with printing flags: no `w`
 * (writes a file) and no `e` (runs a command), which GNU sed also accepts as `s` flags.
 */
const SED_COMMAND =
  /^(?:(?:\d+|\$|\/(?:[^/\\]|\\.)*\/)(?:,(?:\d+|\$|\/(?:[^/\\]|\\.)*\/))?!?)?\s*(?:[pdqQn=]|s([^\w\s\\;])(?:(?!\1)[^\\]|\\.)*\1(?:(?!\1)[^\\]|\\.)*\1[gpiIm0-9]*)?$/;

const sed: ReadOnlyCheck = (args) => {
  const scanned = scanOptions(args, {
    shortWithValue: 'efl',
    longWithValue: ['expression', 'file', 'line-length'],
  });
  if (hasOption(scanned, 'i', ['in-place'])) return '`sed -i` rewrites files';
  if (hasOption(scanned, 'f', ['file'])) return '`sed -f` runs a script the analysis does not read';
  const expression = optionValue(scanned, 'e', 'expression');
  const script = expression ?? scanned.operands[0];
  if (!script || script.value === undefined) return '`sed` runs a script known only at run time';
  const commands = script.value.split(/[;\n]/).map((part) => part.trim());
  const other = commands.find((part) => part !== '' && !SED_COMMAND.test(part));
  return other === undefined ? undefined : `\`sed\` command \`${other}\` may write files or run commands`;
};

/** awk programs that print: no `system()`, no `print > file`, no `print | cmd`, no `cmd | getline`. */
const AWK_EFFECTS = /\bsystem\s*\(|\bprintf?\b[^;{}\n]*[>|]|\|\s*&?\s*getline\b|\|&|@load|\bfflush\b/;

const awk: ReadOnlyCheck = (args, name) => {
  const scanned = scanOptions(args, {
    shortWithValue: 'Fvfeil',
    longWithValue: ['field-separator', 'assign', 'file', 'source', 'include', 'load'],
  });
  if (hasOption(scanned, 'fil', ['file', 'include', 'load']))
    return `\`${name}\` runs a program file the analysis does not read`;
  const program = optionValue(scanned, 'e', 'source') ?? scanned.operands[0];
  if (!program || program.value === undefined) return `\`${name}\` runs a program known only at run time`;
  return AWK_EFFECTS.test(program.value)
    ? `the \`${name}\` program runs commands or writes files`
    : undefined;
};

/** curl's options that only shape a request whose answer goes to standard output. */
const curl = onlyOptions({
  short: 'sSfLIivk46NgGq#',
  valued: 'HAemwuxrbX',
  long: [
    'silent',
    'show-error',
    'fail',
    'fail-with-body',
    'location',
    'head',
    'include',
    'verbose',
    'insecure',
    'compressed',
    'get',
    'http1.1',
    'http2',
    'no-buffer',
    'ipv4',
    'ipv6',
    'globoff',
    'no-progress-meter',
  ],
  longValued: [
    'header',
    'user-agent',
    'referer',
    'max-time',
    'write-out',
    'user',
    'proxy',
    'range',
    'cookie',
    'request',
    'connect-timeout',
    'retry',
    'retry-delay',
    'retry-max-time',
    'max-redirs',
    'url',
    'proto',
    'proto-redir',
    'resolve',
    'cacert',
    'capath',
  ],
  also: (scanned) => {
    const method = optionValue(scanned, 'X', 'request')?.value?.toUpperCase();
    return method === undefined || ['GET', 'HEAD', 'OPTIONS'].includes(method)
      ? undefined
      : `\`curl -X ${method}\` may change what it reaches`;
  },
});

/** `wget -O - url`: the download goes to standard output. */
const wget = onlyOptions({
  short: 'qSv',
  valued: 'OTt',
  long: ['quiet', 'no-verbose', 'server-response', 'no-check-certificate'],
  longValued: ['output-document', 'timeout', 'tries', 'header', 'user-agent', 'max-redirect'],
  also: (scanned) =>
    optionValue(scanned, 'O', 'output-document')?.value === '-'
      ? undefined
      : '`wget` writes the file it downloads',
});

/** Read-only only as one of `subcommands` (the first operand after the global options). */
const subcommands =
  (allowed: readonly string[], globalValued = '', globalLongValued: readonly string[] = []): ReadOnlyCheck =>
  (args, name) => {
    const [subcommand] = scanOptions(args, {
      stopAtOperand: true,
      shortWithValue: globalValued,
      longWithValue: globalLongValued,
    }).operands;
    return subcommand?.value !== undefined && allowed.includes(subcommand.value)
      ? undefined
      : `\`${name} ${subcommand?.raw ?? ''}\` is not one of its read-only subcommands`.replace(' `', '`');
  };

/** The options with a value by which `git branch` and `git tag` filter and show the refs they list. */
const REF_FILTERS = [
  'contains',
  'no-contains',
  'merged',
  'no-merged',
  'sort',
  'format',
  'points-at',
  'color',
  'column',
];

/** git subcommands that only read, each with its own check of what it is given. */
const GIT_READ_ONLY: ReadonlyMap<string, ReadOnlyCheck> = new Map<string, ReadOnlyCheck>([
  ['status', without('', ['output'])],
  ['log', without('', ['output'])],
  ['diff', without('', ['output'])],
  ['show', without('', ['output'])],
  ['rev-parse', anyArguments],
  ['rev-list', anyArguments],
  ['ls-files', anyArguments],
  ['ls-tree', anyArguments],
  ['ls-remote', anyArguments],
  ['cat-file', anyArguments],
  ['describe', anyArguments],
  ['blame', anyArguments],
  ['shortlog', anyArguments],
  ['grep', without('O', ['open-files-in-pager'])],
  ['show-ref', anyArguments],
  ['merge-base', anyArguments],
  ['for-each-ref', anyArguments],
  ['name-rev', anyArguments],
  ['check-ignore', anyArguments],
  ['check-attr', anyArguments],
  ['count-objects', anyArguments],
  ['diff-tree', anyArguments],
  ['diff-index', anyArguments],
  ['diff-files', anyArguments],
  ['version', anyArguments],
  ['help', anyArguments],
  ['whatchanged', anyArguments],
  ['range-diff', anyArguments],
  [
    'reflog',
    (args) =>
      ['', 'show'].includes(values(args)[0] ?? '') || values(args)[0]?.startsWith('-')
        ? undefined
        : 'not `git reflog show`',
  ],
  [
    'stash',
    (args) => (['list', 'show'].includes(values(args)[0] ?? '') ? undefined : 'not `git stash list|show`'),
  ],
  ['worktree', (args) => (values(args)[0] === 'list' ? undefined : 'not `git worktree list`')],
  [
    'branch',
    onlyOptions({
      short: 'arvlq',
      long: ['all', 'remotes', 'verbose', 'list', 'show-current', 'no-color', 'quiet', 'ignore-case'],
      longValued: REF_FILTERS,
      also: (scanned) =>
        scanned.operands.length === 0 || hasOption(scanned, 'l', ['list'])
          ? undefined
          : '`git branch NAME` creates a branch',
    }),
  ],
  [
    'tag',
    onlyOptions({
      short: 'l',
      valued: 'n',
      long: ['list', 'ignore-case'],
      longValued: REF_FILTERS,
      also: (scanned) =>
        scanned.operands.length === 0 || hasOption(scanned, 'l', ['list'])
          ? undefined
          : '`git tag NAME` creates a tag',
    }),
  ],
  [
    'remote',
    (args) => {
      const [verb] = scanOptions(args).operands.map((w) => w.value);
      return verb === undefined || verb === 'show' || verb === 'get-url'
        ? undefined
        : `\`git remote ${verb}\` changes remotes`;
    },
  ],
  [
    'config',
    (args) => {
      const scanned = scanOptions(args, {
        shortWithValue: 'f',
        longWithValue: ['file', 'blob', 'type', 'default'],
      });
      if (
        hasOption(scanned, 'e', [
          'edit',
          'unset',
          'unset-all',
          'add',
          'replace-all',
          'rename-section',
          'remove-section',
        ])
      )
        return '`git config` changes the configuration';
      const [first] = values(scanned.operands);
      return first === 'get' || first === 'list' || scanned.operands.length <= 1
        ? undefined
        : '`git config KEY VALUE` changes the configuration';
    },
  ],
]);

const git: ReadOnlyCheck = (args) => {
  const global = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'Cc',
    longWithValue: ['git-dir', 'work-tree', 'namespace', 'config-env', 'exec-path'],
  });
  if (hasOption(global, 'c', ['config-env', 'exec-path']))
    return '`git -c` sets configuration, which can run commands';
  const [subcommand, ...rest] = global.operands;
  const check = GIT_READ_ONLY.get(subcommand?.value ?? '');
  if (!check) return `\`git ${subcommand?.raw ?? ''}\` is not one of its read-only subcommands`;
  const reason = check(rest, `git ${subcommand?.value}`);
  return reason === undefined
    ? undefined
    : reason.startsWith('not ')
      ? `\`git ${subcommand?.value}\` is ${reason}`
      : reason;
};

/** find's actions that write or delete; `-exec` runs a command, which is judged on its own. */
const FIND_WRITES = new Set(['-delete', '-fprint', '-fprint0', '-fprintf', '-fls']);

const find: ReadOnlyCheck = (args) => {
  const action = values(args).find((value) => FIND_WRITES.has(value));
  return action === undefined ? undefined : `\`find ${action}\` writes or deletes files`;
};

const KUBECTL_GLOBALS = ['namespace', 'context', 'cluster', 'kubeconfig', 'server', 'user', 'selector'];

/**
 * The programs proven read-only (with their checks). Shell builtins that only print, test or set
 * this shell's own state are here too; `export`, `local` and other assignments are judged by the
 * variable they set (variables.ts).
 */
export const READ_ONLY_PROGRAMS: ReadonlyMap<string, ReadOnlyCheck> = new Map<string, ReadOnlyCheck>([
  // Shell builtins.
  [':', anyArguments],
  ['true', anyArguments],
  ['false', anyArguments],
  ['echo', anyArguments],
  ['printf', assigns('v')],
  ['test', anyArguments],
  ['[', anyArguments],
  ['cd', anyArguments],
  ['pushd', anyArguments],
  ['popd', anyArguments],
  ['pwd', anyArguments],
  ['set', anyArguments],
  ['shift', anyArguments],
  ['exit', anyArguments],
  ['return', anyArguments],
  ['break', anyArguments],
  ['continue', anyArguments],
  ['wait', anyArguments],
  ['read', assigns('adnNpt')],
  ['getopts', anyArguments],
  ['type', anyArguments],
  ['command', anyArguments],
  ['unset', anyArguments],
  ['hash', anyArguments],
  ['shopt', anyArguments],
  ['sleep', anyArguments],
  // Files and directories.
  ['ls', anyArguments],
  ['cat', anyArguments],
  ['head', anyArguments],
  ['tail', anyArguments],
  ['wc', anyArguments],
  ['nl', anyArguments],
  ['stat', anyArguments],
  ['file', anyArguments],
  ['du', anyArguments],
  ['df', anyArguments],
  ['tree', without('o', [], 'LPIo')],
  ['find', find],
  ['realpath', anyArguments],
  ['readlink', anyArguments],
  ['basename', anyArguments],
  ['dirname', anyArguments],
  ['md5sum', anyArguments],
  ['sha1sum', anyArguments],
  ['sha256sum', anyArguments],
  ['sha512sum', anyArguments],
  ['b2sum', anyArguments],
  ['cksum', anyArguments],
  ['od', anyArguments],
  ['hexdump', anyArguments],
  ['xxd', operandsAtMost(1, without('r'))],
  ['strings', anyArguments],
  ['cmp', anyArguments],
  ['diff', anyArguments],
  ['comm', anyArguments],
  // Text.
  ['grep', anyArguments],
  ['egrep', anyArguments],
  ['fgrep', anyArguments],
  ['zgrep', anyArguments],
  ['rg', without('', ['pre', 'pre-glob'])],
  ['sort', without('o', ['output', 'compress-program'], 'kt')],
  ['uniq', operandsAtMost(1)],
  ['cut', anyArguments],
  ['tr', anyArguments],
  ['paste', anyArguments],
  ['join', anyArguments],
  ['column', anyArguments],
  ['fold', anyArguments],
  ['fmt', anyArguments],
  ['rev', anyArguments],
  ['tac', anyArguments],
  ['expand', anyArguments],
  ['unexpand', anyArguments],
  ['seq', anyArguments],
  ['yes', anyArguments],
  ['base64', anyArguments],
  ['jq', anyArguments],
  ['yq', without('i', ['inplace'])],
  ['sed', sed],
  ['awk', awk],
  ['gawk', awk],
  ['mawk', awk],
  ['nawk', awk],
  // The system, looked at.
  ['whoami', anyArguments],
  ['id', anyArguments],
  ['groups', anyArguments],
  ['uname', anyArguments],
  ['hostname', hostname],
  ['date', date],
  ['printenv', anyArguments],
  ['which', anyArguments],
  ['uptime', anyArguments],
  ['nproc', anyArguments],
  ['free', anyArguments],
  ['ps', anyArguments],
  ['tty', anyArguments],
  ['locale', anyArguments],
  // Tools, in their read-only forms.
  ['git', git],
  ['curl', curl],
  ['wget', wget],
  [
    'kubectl',
    subcommands(
      [
        'get',
        'describe',
        'logs',
        'version',
        'explain',
        'api-resources',
        'api-versions',
        'cluster-info',
        'top',
      ],
      'nsl',
      KUBECTL_GLOBALS,
    ),
  ],
  [
    'docker',
    subcommands(['ps', 'images', 'inspect', 'logs', 'version', 'info'], 'Hcl', ['host', 'context', 'config']),
  ],
  ['npm', subcommands(['ls', 'list', 'view', 'info', 'outdated', 'explain', 'why', 'root', 'prefix'])],
]);

/** Why `name args` is not proven read-only by the table; undefined when it is. */
export function notReadOnlyReason(name: string, args: readonly ShellWord[]): string | undefined {
  const check = READ_ONLY_PROGRAMS.get(name);
  if (!check) return `runs ${name}, which is not on the list of read-only programs`;
  // A value known only at run time may be an option (`sort $X`, X='-o out'): only a program none
  // of whose options writes is proven read-only with one.
  const runTime = check === anyArguments ? undefined : args.find((word) => word.value === undefined);
  if (runTime)
    return `\`${name}\` is given \`${runTime.raw}\`, known only at run time, which may be an option that writes`;
  return check(args, name);
}
