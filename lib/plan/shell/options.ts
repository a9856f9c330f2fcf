/**
 * Command-line options the way getopt reads them: short clusters (`-rf`), short options with a
 * value attached or in the next word (`-uroot`, `-u root`), long options with `=` or the next word,
 * and `--` ending the options. Arguments known only at run time count as operands.
 */
import { literalWord, type ShellWord } from './words.ts';

export interface OptionSpec {
  /** Short option letters that take a value, e.g. `'ugC'`. */
  readonly shortWithValue?: string;
  /** Long option names (without `--`) that take a value when it is not attached with `=`. */
  readonly longWithValue?: readonly string[];
  /** Options end at the first operand (wrappers, whose operand is the command they run). @default false */
  readonly stopAtOperand?: boolean;
  /** Single-dash long options (`-auto-approve`, `-chdir=x`), read as long options. @default false */
  readonly singleDashLong?: boolean;
}

export interface ScannedOptions {
  /** Short option letters seen. */
  readonly short: ReadonlySet<string>;
  /** Long options seen, by name, with their value (`true` when they take none). */
  readonly long: ReadonlyMap<string, ShellWord | true>;
  /** Values of short options that take one, by letter (the last one wins). */
  readonly shortValues: ReadonlyMap<string, ShellWord>;
  /** The operands, in order. */
  readonly operands: readonly ShellWord[];
  /** With `stopAtOperand`: the index of the first operand in the scanned words, else the words' length. */
  readonly operandIndex: number;
}

/** Scans `words` (the arguments after the command name). */
export function scanOptions(words: readonly ShellWord[], spec: OptionSpec = {}): ScannedOptions {
  const short = new Set<string>();
  const long = new Map<string, ShellWord | true>();
  const shortValues = new Map<string, ShellWord>();
  const operands: ShellWord[] = [];
  const withValue = new Set(spec.longWithValue ?? []);
  let operandIndex = words.length;
  let optionsEnded = false;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const value = word.value;
    if (optionsEnded || value === undefined || value === '-' || !value.startsWith('-')) {
      if (spec.stopAtOperand && !optionsEnded) {
        operandIndex = i;
        operands.push(...words.slice(i));
        break;
      }
      operands.push(word);
      continue;
    }
    if (value === '--') {
      optionsEnded = true;
      if (spec.stopAtOperand) {
        operandIndex = i + 1;
        operands.push(...words.slice(i + 1));
        break;
      }
      continue;
    }
    if (value.startsWith('--') || spec.singleDashLong) {
      const body = value.replace(/^--?/, '');
      const eq = body.indexOf('=');
      const name = eq === -1 ? body : body.slice(0, eq);
      if (eq !== -1) long.set(name, literalWord(body.slice(eq + 1), word.at));
      else if (withValue.has(name) && i + 1 < words.length) long.set(name, words[++i]!);
      else long.set(name, true);
      continue;
    }
    for (let j = 1; j < value.length; j++) {
      const letter = value[j]!;
      short.add(letter);
      if (spec.shortWithValue?.includes(letter)) {
        const attached = value.slice(j + 1);
        if (attached !== '') shortValues.set(letter, literalWord(attached, word.at));
        else if (i + 1 < words.length) shortValues.set(letter, words[++i]!);
        break;
      }
    }
  }
  return { short, long, shortValues, operands, operandIndex };
}

/** The value of a short or long option that takes one, as written; undefined when absent. */
export function optionValue(
  scanned: ScannedOptions,
  letter: string,
  longName?: string,
): ShellWord | undefined {
  const fromLong = longName === undefined ? undefined : scanned.long.get(longName);
  if (fromLong !== undefined && fromLong !== true) return fromLong;
  return scanned.shortValues.get(letter);
}

/** Whether any of the short letters or long names was given. */
export function hasOption(
  scanned: ScannedOptions,
  shortLetters: string,
  longNames: readonly string[] = [],
): boolean {
  for (const letter of shortLetters) if (scanned.short.has(letter)) return true;
  return longNames.some((name) => scanned.long.has(name));
}
