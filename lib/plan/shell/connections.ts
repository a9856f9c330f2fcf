/**
 * What a shell command reaches over the network, read from the programs the analysis found
 * (analyze.ts: quotes removed, wrappers and nested shells seen through): the host operands of
 * network programs (curl and wget with or without a scheme, their proxies, ssh/scp/sftp/rsync and
 * git remotes, nc/telnet/socat, httpie, `aws --endpoint-url`), `/dev/tcp` and `/dev/udp`
 * redirects, and the AWS services and Lambda functions the `aws` CLI calls. Each host is in the
 * canonical form of lib/plan/network.ts `canonicalHost` (URLs through lib/plan/hosts.ts).
 *
 * Where the analysis cannot tell where a command goes, it says so (`unknown`, with why): a
 * destination or a program known only at run time, code in another language or a script the plan
 * does not hold, a program that reads its destinations from a file, text the analysis cannot
 * read. A policy about a host must treat such a command as possibly reaching it.
 *
 * Variables the step's `env` sets are read with their values (`"$TOOL"`, `"https://$HOST/x"`),
 * unless the command names the variable any other way (it may assign it first).
 */
import { urlHost } from '../hosts.ts';
import { canonicalHost } from '../network.ts';
import { UNKNOWN as CANNOT_TELL, type ShellAnalysis } from './analyze.ts';
import { INTERPRETERS } from './interpreters.ts';
import { optionValue, type ScannedOptions, scanOptions } from './options.ts';
import type { ShellWord } from './words.ts';
import { SHELLS, WRAPPERS } from './wrappers.ts';

export interface ShellConnections {
  /** Every program it runs, by name (env variables read), each once, sorted. */
  readonly programs: readonly string[];
  /** Why some program it runs is known only at run time; empty: every one is known. */
  readonly unknownPrograms: readonly string[];
  /** The hosts it reaches, canonical, each once, sorted. */
  readonly hosts: readonly string[];
  /** Why it may reach a host not in `hosts`; empty: `hosts` is all it reaches. */
  readonly unknownDestinations: readonly string[];
  /** AWS services it calls (`lambda`, `s3`; a shell command's, through the `aws` CLI), sorted. */
  readonly awsServices: readonly string[];
  /** Lambda functions it invokes, by the name or ARN written (a function URL's: its URL id), sorted. */
  readonly lambdaFunctions: readonly string[];
}

/** A word's value, the step's env variables filled in; undefined when part of it stays unknown. */
type Resolve = (word: ShellWord) => string | undefined;

interface Found {
  readonly hosts: string[];
  readonly unknown: string[];
  readonly awsServices: string[];
  readonly lambdaFunctions: string[];
}

/** A network program: what its words reach. */
type Reader = (args: readonly ShellWord[], resolve: Resolve, found: Found, name: string) => void;

/** `command`'s network reach, from its analysis; `env` is the step's environment (known values). */
export function shellConnections(
  command: string,
  analysis: ShellAnalysis,
  env: Readonly<Record<string, string>> = {},
): ShellConnections {
  const resolve = resolver(command, env);
  const found: Found = { hosts: [], unknown: [], awsServices: [], lambdaFunctions: [] };
  const programs: string[] = [];
  const unknownPrograms: string[] = [];
  for (const program of analysis.programs) {
    const name = program.name ?? resolve({ ...nameWord(program.raw) })?.replace(/^.*\//, '') ?? undefined;
    if (name === undefined || name === '') {
      const why = `the program \`${program.raw}\` is known only at run time`;
      unknownPrograms.push(why);
      found.unknown.push(why);
      continue;
    }
    programs.push(name);
    const reader = NETWORK_PROGRAMS.get(name);
    if (reader) reader(program.args, resolve, found, name);
    // A wrapper or shell named by a variable: the analysis did not read what it runs.
    else if (program.name === undefined && (WRAPPERS.has(name) || SHELLS.has(name)))
      found.unknown.push(`\`${program.raw}\` (${name}) runs commands the analysis did not read`);
    else if (INTERPRETERS.has(name))
      found.unknown.push(`\`${name}\` runs code in another language, which may connect anywhere`);
    else if (SHELLS.has(name) && runsScriptFile(program.args))
      found.unknown.push(`\`${name}\` runs a script the plan does not hold`);
    else if (program.raw.includes('/') && !/^\/(?:usr\/)?s?bin\//.test(program.raw))
      found.unknown.push(`runs the program \`${program.raw}\`, which the plan does not hold`);
  }
  // `https_proxy=… curl …`, `export ALL_PROXY=…`: where the connections of what follows go.
  for (const [, value] of command.matchAll(PROXY_ASSIGNMENT)) {
    const unquoted = (value ?? '').replace(/^(['"])(.*)\1$/s, '$2');
    if (/[$`]/.test(unquoted)) found.unknown.push(`a proxy set to \`${value}\` is known only at run time`);
    else addHost(found, asUrl(unquoted), value ?? '');
  }
  for (const redirect of analysis.redirects) {
    const target = resolve(redirect);
    const socket = /^\/dev\/(?:tcp|udp)\/([^/]+)\//.exec(target ?? '');
    if (socket?.[1]) addHost(found, canonicalHost(socket[1]), redirect.raw);
    else if (target === undefined && /\/dev\/|^\$|\$\{?\w*\}?\//.test(redirect.text))
      found.unknown.push(`the redirect \`${redirect.raw}\` names a file known only at run time`);
  }
  for (const finding of analysis.destructive)
    if (finding.reason.startsWith(CANNOT_TELL) && !finding.reason.includes('command name is known only'))
      found.unknown.push(`\`${finding.command}\`: ${finding.reason}`);
  return {
    programs: sortedSet(programs),
    unknownPrograms: sortedSet(unknownPrograms),
    hosts: sortedSet(found.hosts),
    unknownDestinations: sortedSet(found.unknown),
    awsServices: sortedSet(found.awsServices),
    lambdaFunctions: sortedSet(found.lambdaFunctions),
  };
}

/** A program name as written, as a word whose value is unknown (its text is what resolve fills). */
function nameWord(raw: string): ShellWord {
  const text = raw.replace(/^"(.*)"$/s, '$1');
  return {
    value: undefined,
    text,
    pattern: false,
    raw,
    at: { row: 0, column: 0 },
    textAt: undefined,
    textIndex: undefined,
  };
}

const VARIABLE = /\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))/g;

/**
 * Fills the step's env variables into a word known only at run time. A variable the command also
 * names other than as `$NAME`/`${NAME}` (`NAME=x`, `read NAME`, `${NAME:-x}`) is not filled: the
 * command may change it.
 */
function resolver(command: string, env: Readonly<Record<string, string>>): Resolve {
  const untouched = (name: string): boolean => {
    if (!Object.hasOwn(env, name)) return false;
    const mentions = command.match(new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`, 'g'))?.length ?? 0;
    const reads = command.match(new RegExp(`\\$(?:\\{${name}\\}|${name}(?![A-Za-z0-9_]))`, 'g'))?.length ?? 0;
    return mentions === reads;
  };
  return (word) => {
    if (word.value !== undefined) return word.value;
    const filled = word.text.replace(VARIABLE, (whole, braced?: string, bare?: string) => {
      const name = (braced ?? bare) as string;
      return untouched(name) ? (env[name] as string) : whole;
    });
    return /[$`]/.test(filled) ? undefined : filled;
  };
}

function addHost(found: Found, host: string | undefined, written: string): void {
  if (host !== undefined && host !== '') found.hosts.push(host);
  else found.unknown.push(`cannot read a host in \`${written}\``);
}

/** A destination word: its host, or why it is unknown. */
function reach(
  found: Found,
  word: ShellWord | undefined,
  resolve: Resolve,
  read: (value: string) => string | undefined,
): void {
  if (word === undefined) return;
  const value = resolve(word);
  if (value === undefined) {
    found.unknown.push(`the destination \`${word.raw}\` is known only at run time`);
    return;
  }
  addHost(found, read(value), word.raw);
}

/** A URL as curl and wget read it: without a scheme, `http://` is assumed. */
const asUrl = (value: string): string | undefined =>
  urlHost(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);

/** `[user@]host[:port]` or `ssh://…`. */
const asSshHost = (value: string): string | undefined =>
  /^[a-z][a-z0-9+.-]*:\/\//i.test(value)
    ? urlHost(value)
    : canonicalHost(
        value
          .replace(/^[^@]*@/, '')
          .replace(/^\[([^\]]*)\].*$/, '[$1]')
          .replace(/:\d*$/, ''),
      );

/** `[user@]host:path`, `host::module` or a URL; undefined when the word is a local path. */
function remotePath(value: string): string | undefined | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value))
    return /^file:/i.test(value) ? null : (urlHost(value) ?? undefined);
  const scp = /^((?:[^@/:]*@)?(?:\[[^\]]*\]|[^/:]+)):/.exec(value);
  return scp?.[1] ? (asSshHost(scp[1]) ?? undefined) : null;
}

/** Variables that name a proxy (`https_proxy`, `ALL_PROXY`): the connection goes there. */
export const PROXY_VARIABLE = /^(?:https?|all|ftp|rsync)_proxy$/i;
const PROXY_ASSIGNMENT = /(?<![\w$])(?:https?|all|ftp|rsync)_proxy=('[^']*'|"[^"]*"|[^\s;&|)]*)/gi;

const CURL_VALUED = 'bcCdDeEFHhKmoPQrtTuUwxXyYzA';
const CURL_LONG_VALUED = [
  'url',
  'proxy',
  'preproxy',
  'connect-to',
  'resolve',
  'config',
  'data',
  'data-raw',
  'data-binary',
  'data-urlencode',
  'header',
  'output',
  'user',
  'user-agent',
  'referer',
  'request',
  'cookie',
  'cookie-jar',
  'max-time',
  'connect-timeout',
  'cacert',
  'cert',
  'key',
  'form',
  'upload-file',
  'write-out',
  'proxy-user',
  'retry',
  'json',
  'range',
  'interface',
  'dns-servers',
  'doh-url',
];

const curl: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, { shortWithValue: CURL_VALUED, longWithValue: CURL_LONG_VALUED });
  if (optionValue(scanned, 'K', 'config'))
    found.unknown.push('`curl --config` reads its URLs and options from a file');
  const globbing = !scanned.short.has('g') && !scanned.long.has('globoff');
  const urls = [...scanned.operands, ...longValues(scanned, ['url'])];
  for (const word of urls)
    reach(found, word, resolve, (value) =>
      globbing && /\{|\[[^\]]*-[^\]]*\]/.test(value) ? undefined : asUrl(value),
    );
  for (const word of [optionValue(scanned, 'x', 'proxy'), ...longValues(scanned, ['preproxy', 'doh-url'])])
    reach(found, word, resolve, asUrl);
  // `--connect-to HOST1:PORT1:HOST2:PORT2` connects to HOST2, `--resolve HOST:PORT:ADDR[,ADDR]` to ADDR.
  for (const word of longValues(scanned, ['connect-to', 'resolve'])) {
    const value = resolve(word);
    if (value === undefined) found.unknown.push(`\`${word.raw}\` is known only at run time`);
    else
      for (const host of (value.split(':')[2] ?? '').split(','))
        addHost(found, canonicalHost(host.replace(/^\[|\]$/g, '')), word.raw);
  }
};

const wget: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, {
    shortWithValue: 'aBDeiIlOoPQtTUwX',
    longWithValue: [
      'input-file',
      'execute',
      'output-document',
      'base',
      'post-data',
      'post-file',
      'header',
      'user',
      'password',
      'directory-prefix',
    ],
  });
  if (optionValue(scanned, 'i', 'input-file'))
    found.unknown.push('`wget --input-file` reads its URLs from a file');
  for (const word of scanned.operands) reach(found, word, resolve, asUrl);
  for (const word of [optionValue(scanned, 'e', 'execute')]) {
    if (!word) continue;
    const value = resolve(word);
    const proxy = /^\s*(?:https?|ftp)_proxy\s*=\s*(.*)$/i.exec(value ?? '');
    if (value === undefined) found.unknown.push(`\`wget -e ${word.raw}\` is known only at run time`);
    else if (proxy?.[1] !== undefined) addHost(found, asUrl(proxy[1].trim()), word.raw);
  }
};

const ssh: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, { stopAtOperand: true, shortWithValue: 'BbcDEeFIiJLlmOoPpQRSWw' });
  reach(found, scanned.operands[0], resolve, asSshHost);
  sshOptions(scanned, args, resolve, found);
};

/** ssh's `-J` jump hosts, `-o` options that change where it connects, `-F` a config file. */
function sshOptions(
  scanned: ScannedOptions,
  args: readonly ShellWord[],
  resolve: Resolve,
  found: Found,
): void {
  const jump = optionValue(scanned, 'J');
  if (jump) {
    const value = resolve(jump);
    if (value === undefined) found.unknown.push(`the jump host \`${jump.raw}\` is known only at run time`);
    else for (const hop of value.split(',')) addHost(found, asSshHost(hop), jump.raw);
  }
  if (optionValue(scanned, 'F')) found.unknown.push('`-F` reads host aliases from a config file');
  // Every `-o` (scanOptions keeps the last): `-oHostName=x`, `-o ProxyJump=x`, `-o ProxyCommand=…`.
  for (const [i, word] of args.entries()) {
    const value = resolve(word);
    const option =
      value === '-o'
        ? args[i + 1]
        : value?.startsWith('-o')
          ? { ...word, value: value.slice(2), text: value.slice(2) }
          : undefined;
    if (!option) continue;
    const text = resolve(option);
    const setting = /^\s*(\w+)\s*[= ]\s*(.*)$/.exec(text ?? '');
    if (text === undefined) found.unknown.push(`the ssh option \`${option.raw}\` is known only at run time`);
    else if (setting && /^(?:hostname|proxyjump)$/i.test(setting[1] ?? ''))
      for (const hop of (setting[2] ?? '').split(',')) addHost(found, asSshHost(hop.trim()), option.raw);
    else if (setting && /^(?:proxycommand|localcommand|include)$/i.test(setting[1] ?? ''))
      found.unknown.push(`the ssh option \`${text}\` decides where it connects`);
  }
}

/** scp, sftp, rsync: every `[user@]host:path`, `host::module` or remote URL operand. */
const remoteCopy =
  (valued: string): Reader =>
  (args, resolve, found, name) => {
    const scanned = scanOptions(args, { shortWithValue: valued });
    for (const word of scanned.operands) {
      const value = resolve(word);
      if (value === undefined) {
        found.unknown.push(`the operand \`${word.raw}\` of \`${name}\` is known only at run time`);
        continue;
      }
      const host = remotePath(value);
      if (host === null) {
        // sftp's destination needs no path: `sftp host`.
        if (name === 'sftp' && word === scanned.operands[0]) addHost(found, asSshHost(value), word.raw);
        continue;
      }
      addHost(found, host, word.raw);
    }
    if (name !== 'rsync') sshOptions(scanned, args, resolve, found);
  };

const GIT_NETWORK = new Set([
  'clone',
  'fetch',
  'pull',
  'push',
  'ls-remote',
  'archive',
  'submodule',
  'remote',
]);

const git: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: 'Cc',
    longWithValue: ['git-dir', 'work-tree', 'namespace', 'exec-path', 'config-env'],
  });
  for (const [i, word] of args.slice(0, scanned.operandIndex).entries()) {
    if (resolve(word) !== '-c') continue;
    const setting = args[i + 1];
    const value = setting && resolve(setting);
    if (setting && value === undefined)
      found.unknown.push(`\`git -c ${setting.raw}\` is known only at run time`);
    else if (value && /^http\.(?:.*\.)?proxy=/i.test(value))
      addHost(found, asUrl(value.replace(/^[^=]*=/, '')), setting?.raw ?? '');
    else if (
      value &&
      /^(?:core\.sshcommand|url\..*\.(?:push)?insteadof|remote\..*\.url|include\.path)=/i.test(value)
    )
      found.unknown.push(`\`git -c ${value}\` decides where it connects`);
  }
  const [sub, ...rest] = scanned.operands;
  const subcommand = sub && resolve(sub);
  if (sub && subcommand === undefined) {
    found.unknown.push(`the git subcommand \`${sub.raw}\` is known only at run time`);
    return;
  }
  if (!subcommand || !GIT_NETWORK.has(subcommand)) return;
  let named = false;
  for (const word of rest) {
    const value = resolve(word);
    if (value === undefined) {
      found.unknown.push(`the git operand \`${word.raw}\` is known only at run time`);
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*::/i.test(value)) {
      found.unknown.push(`\`${value}\` runs a git remote helper`);
      continue;
    }
    const host = remotePath(value.replace(/^--(?:remote|repo|upload-pack|receive-pack)=/, ''));
    if (host === null) continue;
    named = true;
    addHost(found, host, word.raw);
  }
  if (!named && subcommand !== 'remote' && subcommand !== 'archive')
    found.unknown.push(`\`git ${subcommand}\` reaches the remotes the repository's configuration names`);
};

/** nc, ncat, netcat, telnet: the first operand is the host; `-x` a proxy. */
const socketClient: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, { shortWithValue: 'eIiOpqsTVwWxX', longWithValue: ['proxy', 'source'] });
  reach(found, scanned.operands[0], resolve, (value) => canonicalHost(value.replace(/^\[|\]$/g, '')));
  const proxy = optionValue(scanned, 'x', 'proxy');
  if (proxy) reach(found, proxy, resolve, (value) => canonicalHost(value.replace(/:\d+$/, '')));
};

const socat: Reader = (args, resolve, found) => {
  for (const word of scanOptions(args).operands) {
    const value = resolve(word);
    if (value === undefined) {
      found.unknown.push(`the socat address \`${word.raw}\` is known only at run time`);
      continue;
    }
    const remote =
      /^(?:tcp[46]?(?:-connect)?|udp[46]?(?:-connect|-sendto)?|openssl(?:-connect)?|ssl|socks4a?|socks5|proxy(?:-connect)?):([^:,]+)/i.exec(
        value,
      );
    if (remote?.[1]) addHost(found, canonicalHost(remote[1].replace(/^\[|\]$/g, '')), word.raw);
    else if (/^(?:exec|system):/i.test(value)) found.unknown.push(`\`socat ${value}\` runs a command`);
  }
};

/** httpie and xh: `http [METHOD] URL [items…]`; without a scheme, `http://`. */
const httpie: Reader = (args, resolve, found, name) => {
  const scanned = scanOptions(args, {
    longWithValue: ['proxy', 'auth', 'output', 'session', 'verify', 'cert'],
  });
  const [first, second] = scanned.operands;
  const method = first && resolve(first);
  const url = method !== undefined && /^[A-Z]+$/.test(method) ? second : first;
  reach(found, url, resolve, (value) =>
    value.startsWith(':')
      ? 'localhost'
      : asUrl(name === 'https' && !value.includes('://') ? `https://${value}` : value),
  );
  const proxy = scanned.long.get('proxy');
  if (proxy && proxy !== true)
    reach(found, proxy, resolve, (value) => asUrl(value.replace(/^[a-z]+:(?!\/\/)/i, '')));
};

const AWS_LONG_VALUED = [
  'region',
  'profile',
  'output',
  'endpoint-url',
  'query',
  'ca-bundle',
  'color',
  'cli-read-timeout',
  'cli-connect-timeout',
];

/** `aws [options] <service> <operation> …`: the service, an invoked function, `--endpoint-url`. */
const aws: Reader = (args, resolve, found) => {
  const scanned = scanOptions(args, {
    longWithValue: [...AWS_LONG_VALUED, 'function-name', 'cli-input-json', 'cli-input-yaml'],
  });
  const [service, operation] = scanned.operands;
  const serviceName = service && resolve(service);
  if (service && serviceName === undefined)
    found.unknown.push(`the AWS service \`${service.raw}\` is known only at run time`);
  if (serviceName) found.awsServices.push(serviceName.toLowerCase());
  const endpoint = scanned.long.get('endpoint-url');
  if (endpoint && endpoint !== true) reach(found, endpoint, resolve, asUrl);
  if (serviceName?.toLowerCase() !== 'lambda') return;
  const op = operation && resolve(operation);
  if (op === undefined || !/^invoke/.test(op)) return;
  const fn = scanned.long.get('function-name');
  const fnName = fn && fn !== true ? resolve(fn) : undefined;
  if (fnName === undefined)
    found.unknown.push('`aws lambda invoke`: the function is known only at run time, or in --cli-input-json');
  else found.lambdaFunctions.push(fnName);
};

function longValues(scanned: ScannedOptions, names: readonly string[]): ShellWord[] {
  return names.flatMap((name) => {
    const value = scanned.long.get(name);
    return value && value !== true ? [value] : [];
  });
}

function runsScriptFile(args: readonly ShellWord[]): boolean {
  const scanned = scanOptions(args, { stopAtOperand: true, longWithValue: ['rcfile', 'init-file'] });
  return !scanned.short.has('c') && scanned.operands.length > 0;
}

/** The network programs read, each with how its words name where it connects. */
export const NETWORK_PROGRAMS: ReadonlyMap<string, Reader> = new Map<string, Reader>([
  ['curl', curl],
  ['wget', wget],
  ['ssh', ssh],
  ['scp', remoteCopy('cDFiJloPSX')],
  ['sftp', remoteCopy('BbcDFiJloPRSs')],
  ['rsync', remoteCopy('eBfTM')],
  ['git', git],
  ['nc', socketClient],
  ['ncat', socketClient],
  ['netcat', socketClient],
  ['telnet', socketClient],
  ['socat', socat],
  ['http', httpie],
  ['https', httpie],
  ['xh', httpie],
  ['aws', aws],
]);

const sortedSet = (values: readonly string[]): string[] => [...new Set(values)].sort();
