/**
 * Which words of a command reach outside the workspace it runs in (a contract's or rollback's
 * working directory): an absolute path (`/etc/passwd`, `file:///etc`), the home directory (`~`,
 * `$HOME`, a bare `cd`), or a relative path that climbs above where it starts (`..`,
 * `../other`, `a/../../b`). Relative paths are read from the workspace itself: `cd src && cat
 * ../x` is marked although it stays inside. Not marks: the command's own name (`/usr/bin/env`
 * runs a program, it does not read a place), the devices every shell uses (`/dev/null`,
 * `/dev/stdout`, …), the text `echo`/`printf` print, and the pattern or script a text tool
 * (`grep`, `sed`, `awk`, `jq`, …) takes first.
 */
import { hasOption, scanOptions } from './options.ts';
import type { ShellWord } from './words.ts';

/** Devices a command may name without reaching anything of anyone's. */
const HARMLESS_DEVICES =
  /^\/dev\/(?:null|zero|random|urandom|tty|stdin|stdout|stderr|fd\/\d+)$|^\/proc\/self\/fd\/\d+$/;

/** A path as people write them: no spaces, no regular-expression marks after the slash. */
const PATH_LIKE = /^\/(?:[\w.@+~%=,:-]+\/?)*$/;

/** Commands whose words are printed, not opened. */
const PRINTERS: ReadonlySet<string> = new Set(['echo', 'printf']);

/** Text tools whose first operand is a pattern or a script, not a file. */
const PATTERN_FIRST: ReadonlySet<string> = new Set([
  'grep',
  'egrep',
  'fgrep',
  'zgrep',
  'rg',
  'ag',
  'ack',
  'sed',
  'awk',
  'gawk',
  'mawk',
  'jq',
]);

/** Commands that change the working directory. */
const DIRECTORY_CHANGERS: ReadonlySet<string> = new Set(['cd', 'pushd']);

export interface OutsideWord {
  readonly word: ShellWord;
  /** e.g. `uses /etc/passwd, outside the workspace`. */
  readonly reason: string;
}

/** The words of one command line (`name` without its path, then its arguments) that reach outside the workspace. */
export function outsideWords(name: string, nameWord: ShellWord, args: readonly ShellWord[]): OutsideWord[] {
  if (PRINTERS.has(name)) return [];
  if (DIRECTORY_CHANGERS.has(name) && args.every((word) => word.value?.startsWith('-')))
    return [
      { word: nameWord, reason: `\`${name}\` alone goes to the home directory, outside the workspace` },
    ];
  const skipped = PATTERN_FIRST.has(name) ? firstOperand(args) : undefined;
  const found: OutsideWord[] = [];
  for (const word of args) {
    if (word === skipped) continue;
    const place = outsidePlace(word);
    if (place) found.push({ word, reason: place });
  }
  return found;
}

/** Why a redirect's file (`< /etc/passwd`, `> ~/x`) is outside the workspace; undefined when it is not. */
export function outsideRedirect(word: ShellWord): string | undefined {
  return outsidePlace(word);
}

/** Why a word names a place outside the workspace, or undefined. */
export function outsidePlace(word: ShellWord): string | undefined {
  if (word.value === undefined) {
    // Known only at run time; the home directory is the one place it surely names.
    return /^"?(?:~|\$HOME\b|\$\{HOME\})/.test(word.raw)
      ? 'uses the home directory, outside the workspace'
      : undefined;
  }
  // `--file=/etc/passwd`, `of=/dev/x`: the value after the first `=` is the path.
  const equals = word.value.startsWith('-') || /^\w+=/.test(word.value) ? word.value.indexOf('=') : -1;
  const path = equals >= 0 ? word.value.slice(equals + 1) : word.value;
  return placeOf(path);
}

/** Why a path (as a command or a tool's `cwd` would use it) is outside the workspace, or undefined. */
export function placeOf(path: string): string | undefined {
  if (path.startsWith('file://')) return placeOf(path.slice('file://'.length) || '/');
  if (/^~[\w.-]*(?:\/|$)/.test(path)) return `uses ${path}, in a home directory outside the workspace`;
  if (path.startsWith('/')) {
    if (HARMLESS_DEVICES.test(path) || !PATH_LIKE.test(path)) return undefined;
    return `uses ${path}, outside the workspace`;
  }
  if (climbsOut(path)) return `uses ${path}, above the workspace`;
  return undefined;
}

/** Whether a relative path goes above where it starts (`..`, `a/../..`). */
function climbsOut(path: string): boolean {
  if (!path.includes('..') || /\s/.test(path)) return false;
  let depth = 0;
  for (const part of path.split('/')) {
    if (part === '..') depth -= 1;
    else if (part !== '' && part !== '.') depth += 1;
    if (depth < 0) return true;
  }
  return false;
}

/** The first operand (not an option) of a text tool, unless its pattern came with `-e`/`-f` (then every operand is a file). */
function firstOperand(args: readonly ShellWord[]): ShellWord | undefined {
  const scanned = scanOptions(args);
  if (hasOption(scanned, 'ef', ['regexp', 'file', 'expression'])) return undefined;
  return scanned.operands[0];
}
