/**
 * Commands that run other commands, and what they run: wrappers that take a command line
 * (`sudo`, `env`, `xargs`, `timeout`, `find -exec`, `ssh host …`), shells and other runners that
 * take a script as text (`bash -c '…'`, `eval '…'`, `trap '…' EXIT`), shells that read their
 * script from standard input (`curl … | bash`, `bash <<EOF`), and what cannot be seen through
 * (`source file`, `eval "$x"`).
 *
 * Each wrapper also says what it adds itself (`sudo`: another user; `ssh`: another host; `nice`:
 * nothing), which decides whether `sudo ls` is read-only (it is not: its effect is unknown).
 * Running a script file (`bash deploy.sh`) is not seen through: its effect is unknown, the code is
 * not in the plan's text. `source`/`.` counts as destructive: it loads a file into this shell,
 * where it can redefine what every later command means.
 */
import { hasOption, optionValue, scanOptions } from './options.ts';
import { settingReason } from './variables.ts';
import { literalWord, type ShellWord } from './words.ts';

/** What a command runs besides itself. */
export type Inner =
  /** Another command line, e.g. `rm -rf x` in `sudo rm -rf x`. */
  | { readonly kind: 'command'; readonly words: readonly ShellWord[]; readonly keepsStdin: boolean }
  /** Shell text to parse again, e.g. the string of `bash -c '…'`; `words` hold it (joined by spaces). */
  | { readonly kind: 'script'; readonly words: readonly ShellWord[]; readonly runner: string }
  /** A shell that reads its commands from standard input. */
  | { readonly kind: 'stdin-script'; readonly runner: string }
  /** Runs something that cannot be known before it runs. */
  | { readonly kind: 'opaque'; readonly reason: string }
  /** Changes what runs in a way not proven harmless (`env PATH=./bin …`): the effect is unknown. */
  | { readonly kind: 'unknown'; readonly reason: string };

/** Shells whose `-c` string and standard input are shell commands. */
export const SHELLS: ReadonlySet<string> = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'ash',
  'mksh',
  'yash',
]);

type Unwrap = (args: readonly ShellWord[], name: string) => Inner[];

const command = (words: readonly ShellWord[], keepsStdin = true): Inner[] =>
  words.length === 0 ? [] : [{ kind: 'command', words, keepsStdin }];

const script = (words: readonly ShellWord[], runner: string): Inner[] =>
  words.length === 0 ? [] : [{ kind: 'script', words, runner }];

// `X="$Y"` is an assignment too: its name is literal text, whatever its value turns out to be.
const isAssignment = (word: ShellWord) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(word.value ?? word.text);

/** The assignments leading `words` that change what runs (`PATH=./bin`, `LD_PRELOAD=…`). */
function riskyAssignments(words: readonly ShellWord[]): Inner[] {
  const found: Inner[] = [];
  for (const word of words) {
    if (!isAssignment(word)) break;
    const text = word.value ?? word.text;
    const reason = settingReason(text.slice(0, text.indexOf('=')));
    if (reason) found.push({ kind: 'unknown', reason });
  }
  return found;
}

function withoutAssignments(words: readonly ShellWord[]): readonly ShellWord[] {
  let i = 0;
  while (i < words.length && isAssignment(words[i]!)) i++;
  return words.slice(i);
}

/** `bash [options] [-c string | file | -s]`. */
const shell: Unwrap = (args, name) => {
  let readsStdin = false;
  let commandString = false;
  let i = 0;
  for (; i < args.length; i++) {
    const value = args[i]!.value;
    if (value === undefined) break;
    if (value === '--' || value === '-') {
      i++;
      break;
    }
    if (value === '--rcfile' || value === '--init-file') {
      i++;
      continue;
    }
    if (value.startsWith('--')) continue;
    if (!/^[-+][A-Za-z]+$/.test(value)) break;
    if (value.startsWith('-') && value.includes('c')) commandString = true;
    if (value.startsWith('-') && value.includes('s')) readsStdin = true;
    if (/[oO]/.test(value)) i++;
  }
  if (commandString) return script(args.slice(i, i + 1), `${name} -c`);
  if (readsStdin || i >= args.length) return [{ kind: 'stdin-script', runner: name }];
  // `bash <(curl …)` runs what a command prints, as `curl … | bash` does.
  if (args[i]!.raw.startsWith('<('))
    return [{ kind: 'opaque', reason: `${name} runs commands read from the output of \`${args[i]!.raw}\`` }];
  return [];
};

const sudo: Unwrap = (args, name) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'ugCDprtUTR',
    longWithValue: [
      'user',
      'group',
      'close-from',
      'chdir',
      'host',
      'prompt',
      'role',
      'type',
      'other-user',
      'command-timeout',
      'chroot',
    ],
  });
  if (hasOption(scanned, 'e', ['edit'])) return [];
  const operands = withoutAssignments(scanned.operands);
  const risky = riskyAssignments(scanned.operands);
  if (hasOption(scanned, 'si', ['shell', 'login']))
    return [
      ...risky,
      ...(operands.length > 0
        ? script(operands, `${name} -s`)
        : [{ kind: 'stdin-script' as const, runner: name }]),
    ];
  return [...risky, ...command(operands)];
};

const env: Unwrap = (args) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'uCSP',
    longWithValue: ['unset', 'chdir', 'split-string'],
  });
  const split = optionValue(scanned, 'S', 'split-string');
  const path: Inner[] = hasOption(scanned, 'P')
    ? [{ kind: 'unknown', reason: 'env -P changes where the command is looked up' }]
    : [];
  return [
    ...path,
    ...riskyAssignments(scanned.operands),
    ...(split ? script([split], 'env -S') : []),
    ...command(withoutAssignments(scanned.operands)),
  ];
};

const afterOptions =
  (shortWithValue = '', longWithValue: readonly string[] = [], skipOperands = 0): Unwrap =>
  (args) =>
    command(
      scanOptions(args, { stopAtOperand: true, shortWithValue, longWithValue }).operands.slice(skipOperands),
    );

const commandBuiltin: Unwrap = (args) => {
  const scanned = scanOptions(args, { stopAtOperand: true });
  // `command -v rm` looks a name up; it runs nothing.
  return hasOption(scanned, 'vV') ? [] : command(scanned.operands);
};

const xargs: Unwrap = (args) =>
  command(
    scanOptions(args, {
      stopAtOperand: true,
      shortWithValue: 'adEILnPs',
      longWithValue: ['arg-file', 'delimiter', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'],
    }).operands,
    false,
  );

const flock: Unwrap = (args) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'wEc',
    longWithValue: ['wait', 'timeout', 'conflict-exit-code', 'command'],
  });
  // `flock [options] file -c 'cmd'` or `flock [options] file cmd …`: -c may follow the file.
  const [, next, ...rest] = scanned.operands;
  const text =
    optionValue(scanned, 'c', 'command') ??
    (next?.value === '-c' || next?.value === '--command' ? rest[0] : undefined);
  return text ? script([text], 'flock -c') : command(scanned.operands.slice(1));
};

const watch: Unwrap = (args) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'nq',
    longWithValue: ['interval'],
  });
  return hasOption(scanned, 'x', ['exec']) ? command(scanned.operands) : script(scanned.operands, 'watch');
};

/** `ssh [options] destination [command …]`: the remote shell runs the words joined by spaces. */
const ssh: Unwrap = (args, name) => {
  const scanned = scanOptions(args, { stopAtOperand: true, shortWithValue: 'BbcDEeFIiJLlmOoPpQRSWw' });
  const remote = scanned.operands.slice(1);
  return remote.length > 0 ? script(remote, name) : [{ kind: 'stdin-script', runner: name }];
};

const su: Unwrap = (args, name) => {
  const scanned = scanOptions(args, {
    stopAtOperand: name === 'runuser',
    shortWithValue: 'cgGsuw',
    longWithValue: ['command', 'session-command', 'group', 'supp-group', 'shell', 'user'],
  });
  const text = optionValue(scanned, 'c', 'command') ?? optionValue(scanned, '', 'session-command');
  if (text) return script([text], `${name} -c`);
  return name === 'runuser' && hasOption(scanned, 'u', ['user']) ? command(scanned.operands) : [];
};

const trap: Unwrap = (args) => {
  const [action, ...signals] = args;
  if (
    !action ||
    signals.length === 0 ||
    action.value === '-' ||
    action.value === '' ||
    action.value?.startsWith('-')
  )
    return [];
  return action.value === undefined
    ? [{ kind: 'opaque', reason: 'trap runs text that is built at run time' }]
    : script([action], 'trap');
};

const evalBuiltin: Unwrap = (args) =>
  args.every((word) => word.value !== undefined)
    ? script(args, 'eval')
    : [{ kind: 'opaque', reason: 'eval runs text that is built at run time' }];

/** `alias name='text'`: the text runs wherever the name is used later (with expand_aliases). */
const alias: Unwrap = (args) =>
  args.flatMap((word): Inner[] => {
    if (word.value === undefined)
      return [{ kind: 'opaque', reason: 'alias defines a command from text built at run time' }];
    const eq = word.value.indexOf('=');
    return eq > 0 ? script([literalWord(word.value.slice(eq + 1), word.at)], 'alias') : [];
  });

/** `hash -p /bin/rm ls` makes `ls` run `rm`. */
const hash: Unwrap = (args) =>
  hasOption(scanOptions(args, { shortWithValue: 'pt' }), 'p')
    ? [{ kind: 'opaque', reason: 'hash -p makes a command name run another program' }]
    : [];

const source: Unwrap = (args, name) => [
  {
    kind: 'opaque',
    reason: `${name} loads ${args[0] ? `\`${args[0].raw}\`` : 'a file'} into this shell, where it can redefine every later command`,
  },
];

/** `find … -exec cmd {} ;` (and `-execdir`, `-ok`, `-okdir`): each clause is a command. */
const find: Unwrap = (args) => {
  const inner: Inner[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(args[i]!.value ?? '')) continue;
    let end = i + 1;
    while (end < args.length && args[end]!.value !== ';' && args[end]!.value !== '+') end++;
    inner.push(...command(args.slice(i + 1, end), false));
    i = end;
  }
  return inner;
};

const CONTAINER_GLOBALS = {
  stopAtOperand: true,
  shortWithValue: 'Hcl',
  longWithValue: ['host', 'context', 'config', 'log-level'],
};

/** `docker exec [options] container cmd …` and `docker compose exec [options] service cmd …`. */
const containerExec: Unwrap = (args) => {
  const [subcommand, ...rest] = scanOptions(args, CONTAINER_GLOBALS).operands;
  let execArgs: readonly ShellWord[] | undefined;
  if (subcommand?.value === 'exec') execArgs = rest;
  else if (subcommand?.value === 'compose') {
    const [verb, ...composeRest] = scanOptions(rest, {
      stopAtOperand: true,
      shortWithValue: 'fp',
      longWithValue: ['file', 'project-name', 'project-directory', 'profile', 'env-file'],
    }).operands;
    if (verb?.value === 'exec') execArgs = composeRest;
  }
  if (!execArgs) return [];
  const scanned = scanOptions(execArgs, {
    stopAtOperand: true,
    shortWithValue: 'euw',
    longWithValue: ['env', 'env-file', 'user', 'workdir', 'detach-keys', 'index'],
  });
  return command(scanned.operands.slice(1));
};

/** `kubectl exec pod -- cmd …`. */
const kubectlExec: Unwrap = (args) => {
  const dashes = args.findIndex((word) => word.value === '--');
  return dashes > 0 && args.slice(0, dashes).some((word) => word.value === 'exec')
    ? command(args.slice(dashes + 1))
    : [];
};

/** `npx [options] cmd …`, `npx -c 'script'`. */
const npx: Unwrap = (args, name) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'pc',
    longWithValue: ['package', 'call'],
  });
  const text = optionValue(scanned, 'c', 'call');
  return text ? script([text], `${name} -c`) : command(scanned.operands);
};

/** `npm exec`, `pnpm exec|dlx`, `yarn exec|dlx`: like npx after the subcommand. */
const packageRunner: Unwrap = (args, name) => {
  const [subcommand, ...rest] = args;
  return ['exec', 'dlx', 'x'].includes(subcommand?.value ?? '') ? npx(rest, name) : [];
};

/** `script [options] [file]`: `-c 'cmd'` is shell text; without it, an interactive shell reads its input. */
const scriptCommand: Unwrap = (args, name) => {
  const scanned = scanOptions(args, {
    shortWithValue: 'cEIOBT',
    longWithValue: ['command', 'echo', 'log-in', 'log-out', 'log-io', 'log-timing', 'logging-format'],
  });
  const text = optionValue(scanned, 'c', 'command');
  return text ? script([text], `${name} -c`) : [{ kind: 'stdin-script', runner: name }];
};

/** `sg group -c 'cmd'` or `sg group cmd …`. */
const sg: Unwrap = (args, name) => {
  const [, ...rest] = args;
  if (rest[0]?.value === '-c' && rest[1]) return script([rest[1]], `${name} -c`);
  return rest.length > 0 ? script(rest, name) : [];
};

/** `parallel [options] 'cmd {}' ::: args`: the command is shell text, run once per argument. */
const parallel: Unwrap = (args, name) => {
  const end = args.findIndex((word) => word.value === ':::' || word.value === '::::');
  const scanned = scanOptions(end === -1 ? args : args.slice(0, end), {
    stopAtOperand: true,
    shortWithValue: 'jSaI',
    longWithValue: ['jobs', 'sshlogin', 'arg-file', 'delay', 'timeout', 'joblog', 'results'],
  });
  return script(scanned.operands, name);
};

/** `uv run cmd`, `poetry run cmd`, `bundle exec cmd`: the command after the subcommand. */
const afterSubcommand =
  (subcommand: string, shortWithValue = '', longWithValue: readonly string[] = []): Unwrap =>
  (args) =>
    args[0]?.value === subcommand
      ? command(scanOptions(args.slice(1), { stopAtOperand: true, shortWithValue, longWithValue }).operands)
      : [];

/** What running a command through a wrapper adds to what the command does. */
export interface Wrapper {
  readonly unwrap: Unwrap;
  /**
   * Why the wrapper itself is not proven harmless (another user, another host, a file it writes),
   * given its arguments; absent: it adds nothing (`nice`, `timeout`, `taskset`).
   */
  readonly adds?: (args: readonly ShellWord[]) => string | undefined;
  /** The program is judged as itself too (its own options and subcommands): `find`, `docker`, `npm`. */
  readonly isProgram?: true;
}

const adds = (reason: string) => () => reason;
const program = (unwrap: Unwrap): Wrapper => ({ unwrap, isProgram: true });

/**
 * Every command that runs another command, one a line: how to find what it runs, and what it adds.
 * tests/plan/shell-tables.test.ts runs `rm -rf` and `ls` through each.
 */
export const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ...[...SHELLS].map((name): [string, Wrapper] => [name, { unwrap: shell }]),
  ['command', { unwrap: commandBuiltin }],
  ['builtin', { unwrap: afterOptions() }],
  ['exec', { unwrap: afterOptions('a') }],
  ['nohup', { unwrap: afterOptions() }],
  ['setsid', { unwrap: afterOptions() }],
  ['coproc', { unwrap: afterOptions() }],
  ['time', { unwrap: afterOptions('fo', ['format', 'output']) }],
  ['nice', { unwrap: afterOptions('n', ['adjustment']) }],
  ['timeout', { unwrap: afterOptions('sk', ['signal', 'kill-after'], 1) }],
  ['stdbuf', { unwrap: afterOptions('ioe', ['input', 'output', 'error']) }],
  ['ionice', { unwrap: afterOptions('cnpPu', ['class', 'classdata', 'pid', 'pgid', 'uid']) }],
  ['taskset', { unwrap: afterOptions('', [], 1) }],
  ['chrt', { unwrap: afterOptions('TPD', ['sched-runtime', 'sched-period', 'sched-deadline'], 1) }],
  ['prlimit', { unwrap: afterOptions('p', ['pid', 'output']) }],
  [
    'numactl',
    { unwrap: afterOptions('NCmipP', ['cpunodebind', 'physcpubind', 'membind', 'interleave', 'preferred']) },
  ],
  ['cgexec', { unwrap: afterOptions('g') }],
  ['faketime', { unwrap: afterOptions('', [], 1) }],
  ['fakeroot', { unwrap: afterOptions('lsib', ['lib', 'faked']) }],
  ['eatmydata', { unwrap: afterOptions() }],
  ['catchsegv', { unwrap: afterOptions() }],
  ['unbuffer', { unwrap: afterOptions() }],
  ['linux32', { unwrap: afterOptions() }],
  ['linux64', { unwrap: afterOptions() }],
  ['setarch', { unwrap: afterOptions('', [], 1) }],
  ['busybox', { unwrap: afterOptions() }],
  ['xargs', { unwrap: xargs }],
  ['watch', { unwrap: watch }],
  ['parallel', { unwrap: parallel }],
  ['env', { unwrap: env }],
  ['trap', { unwrap: trap }],
  ['eval', { unwrap: evalBuiltin }],
  ['alias', { unwrap: alias }],
  ['hash', { unwrap: hash }],
  ['source', { unwrap: source }],
  ['.', { unwrap: source }],
  [
    'strace',
    {
      unwrap: afterOptions('abeEIoOpPsSuUX', ['output', 'attach', 'signal', 'trace', 'user', 'env']),
      adds: (args) =>
        optionValue(
          scanOptions(args, {
            stopAtOperand: true,
            shortWithValue: 'abeEIoOpPsSuUX',
            longWithValue: ['output'],
          }),
          'o',
          'output',
        )
          ? 'strace -o writes its trace to a file'
          : undefined,
    },
  ],
  [
    'ltrace',
    {
      unwrap: afterOptions('aeEnoOpsSuUXAD', ['output', 'library']),
      adds: adds('ltrace may write its trace to a file'),
    },
  ],
  ['valgrind', { unwrap: afterOptions(), adds: adds('valgrind may write its logs to files') }],
  ['script', { unwrap: scriptCommand, adds: adds('`script` writes what it records to a file') }],
  ['flock', { unwrap: flock, adds: adds('`flock` creates the lock file if it is missing') }],
  [
    'chroot',
    { unwrap: afterOptions('', ['userspec', 'groups'], 1), adds: adds('runs it in another root directory') },
  ],
  [
    'unshare',
    {
      unwrap: afterOptions('SGRwl', ['propagation', 'setgroups', 'root', 'wd', 'setuid', 'setgid']),
      adds: adds('runs it in new namespaces'),
    },
  ],
  [
    'nsenter',
    {
      unwrap: afterOptions('tSGwr', ['target', 'setuid', 'setgid', 'wd', 'root']),
      adds: adds("runs it in another process's namespaces"),
    },
  ],
  [
    'systemd-run',
    {
      unwrap: afterOptions('puEMH', [
        'property',
        'unit',
        'uid',
        'gid',
        'nice',
        'working-directory',
        'setenv',
        'description',
        'slice',
        'machine',
        'host',
      ]),
      adds: adds('runs it as a system service'),
    },
  ],
  ['sudo', { unwrap: sudo, adds: adds('runs it as another user') }],
  ['doas', { unwrap: sudo, adds: adds('runs it as another user') }],
  ['pkexec', { unwrap: afterOptions('', ['user']), adds: adds('runs it as another user') }],
  ['su', { unwrap: su, adds: adds('runs it as another user') }],
  ['runuser', { unwrap: su, adds: adds('runs it as another user') }],
  ['sg', { unwrap: sg, adds: adds('runs it as another group') }],
  ['ssh', { unwrap: ssh, adds: adds('runs it on another host') }],
  ['npx', { unwrap: npx, adds: adds('npx may download the package it runs') }],
  ['bunx', { unwrap: npx, adds: adds('bunx may download the package it runs') }],
  [
    'uv',
    {
      unwrap: afterSubcommand('run', '', ['with', 'python', 'project', 'directory']),
      adds: adds('`uv run` may install the project first'),
    },
  ],
  ['poetry', { unwrap: afterSubcommand('run'), adds: adds('`poetry run` runs in the project environment') }],
  ['pipenv', { unwrap: afterSubcommand('run'), adds: adds('`pipenv run` runs in the project environment') }],
  [
    'bundle',
    { unwrap: afterSubcommand('exec'), adds: adds('`bundle exec` runs in the project environment') },
  ],
  ['find', program(find)],
  ['docker', program(containerExec)],
  ['podman', program(containerExec)],
  ['kubectl', program(kubectlExec)],
  ['npm', program(packageRunner)],
  ['pnpm', program(packageRunner)],
  ['yarn', program(packageRunner)],
]);

/** What `name args` runs besides itself; empty for a command that runs nothing else. */
export function innerCommands(name: string, args: readonly ShellWord[]): Inner[] {
  return WRAPPERS.get(name)?.unwrap(args, name) ?? [];
}
