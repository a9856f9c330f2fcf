/**
 * Commands that run other commands, and what they run: wrappers that take a command line
 * (`sudo`, `env`, `xargs`, `timeout`, `find -exec`, `ssh host …`), shells and other runners that
 * take a script as text (`bash -c '…'`, `eval '…'`, `trap '…' EXIT`), shells that read their
 * script from standard input (`curl … | bash`, `bash <<EOF`), and what cannot be seen through
 * (`source file`, `eval "$x"`).
 *
 * Running a script file (`bash deploy.sh`, `./deploy.sh`) is not seen through and not flagged:
 * like `make` or `npm test`, it runs code the plan's text does not hold. `source`/`.` is flagged:
 * it loads a file into this shell, where it can redefine what every later command means.
 */
import { hasOption, optionValue, scanOptions } from './options.ts';
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
  | { readonly kind: 'opaque'; readonly reason: string };

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
  if (hasOption(scanned, 'si', ['shell', 'login']))
    return operands.length > 0 ? script(operands, `${name} -s`) : [{ kind: 'stdin-script', runner: name }];
  return command(operands);
};

const env: Unwrap = (args) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'uCSP',
    longWithValue: ['unset', 'chdir', 'split-string'],
  });
  const split = optionValue(scanned, 'S', 'split-string');
  return [...(split ? script([split], 'env -S') : []), ...command(withoutAssignments(scanned.operands))];
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

const UNWRAPS: ReadonlyMap<string, Unwrap> = new Map<string, Unwrap>([
  ...[...SHELLS].map((name) => [name, shell] as const),
  ['command', commandBuiltin],
  ['builtin', afterOptions()],
  ['exec', afterOptions('a')],
  ['nohup', afterOptions()],
  ['setsid', afterOptions()],
  ['coproc', afterOptions()],
  ['time', afterOptions('fo', ['format', 'output'])],
  ['nice', afterOptions('n', ['adjustment'])],
  ['timeout', afterOptions('sk', ['signal', 'kill-after'], 1)],
  ['stdbuf', afterOptions('ioe', ['input', 'output', 'error'])],
  ['ionice', afterOptions('cnpPu', ['class', 'classdata', 'pid', 'pgid', 'uid'])],
  ['chroot', afterOptions('', ['userspec', 'groups'], 1)],
  ['chrt', afterOptions('TPD', ['sched-runtime', 'sched-period', 'sched-deadline'], 1)],
  ['taskset', afterOptions('', [], 1)],
  ['prlimit', afterOptions('p', ['pid'])],
  ['unbuffer', afterOptions()],
  ['fakeroot', afterOptions('is', ['lib', 'faked'])],
  ['strace', afterOptions('abeEIoOpPsSuUX', ['output', 'attach', 'user', 'signal', 'trace'])],
  ['ltrace', afterOptions('aeEnoOpsSuUX', ['output', 'library'])],
  ['busybox', afterOptions()],
  ['sudo', sudo],
  ['doas', sudo],
  ['env', env],
  ['xargs', xargs],
  ['flock', flock],
  ['watch', watch],
  ['ssh', ssh],
  ['su', su],
  ['runuser', su],
  ['trap', trap],
  ['eval', evalBuiltin],
  ['alias', alias],
  ['hash', hash],
  ['source', source],
  ['.', source],
  ['find', find],
  ['docker', containerExec],
  ['podman', containerExec],
  ['kubectl', kubectlExec],
  ['npx', npx],
  ['bunx', npx],
  ['npm', packageRunner],
  ['pnpm', packageRunner],
  ['yarn', packageRunner],
]);

/** What `name args` runs besides itself; empty for a command that runs nothing else. */
export function innerCommands(name: string, args: readonly ShellWord[]): Inner[] {
  return UNWRAPS.get(name)?.(args, name) ?? [];
}
