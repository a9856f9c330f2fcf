/**
 * Programs that run code in another language (`python3 -c`, `node -e`, `perl -e`, a script file):
 * their effect is unknown, the analysis does not read the language. Two things in the code are
 * still read, because they are common and plain: shell text handed to `system(…)`, `os.system(…)`,
 * `execSync(…)` and the like (parsed as shell again, like `bash -c`), and calls that delete files
 * (`shutil.rmtree`, `fs.rmSync`, …), which make the call destructive.
 *
 * One interpreter a line, one code pattern a line; tests/plan/shell-tables.test.ts runs each.
 */
import { optionValue, scanOptions } from './options.ts';
import { literalWord, type ShellWord } from './words.ts';

export interface Interpreter {
  /** Short options whose value is code (`-c`, `-e`). */
  readonly codeShort: string;
  /** Long options whose value is code (`--eval`). */
  readonly codeLong: readonly string[];
  /** Short options that take some other value (their value is not the script file). */
  readonly valued?: string;
}

const code = (codeShort: string, codeLong: readonly string[] = [], valued = ''): Interpreter => ({
  codeShort,
  codeLong,
  valued,
});

export const INTERPRETERS: ReadonlyMap<string, Interpreter> = new Map([
  ['python', code('c', [], 'mWX')],
  ['python3', code('c', [], 'mWX')],
  ['python2', code('c', [], 'mWX')],
  ['pypy3', code('c', [], 'mWX')],
  ['node', code('ep', ['eval', 'print'], 'r')],
  ['nodejs', code('ep', ['eval', 'print'], 'r')],
  ['bun', code('ep', ['eval', 'print'])],
  ['deno', code('', ['eval'])],
  ['perl', code('eE', [], 'IMm')],
  ['ruby', code('e', [], 'Ir')],
  ['php', code('r', [], 'cd')],
  ['lua', code('e', [], 'l')],
  ['Rscript', code('e')],
  ['osascript', code('e')],
  ['pwsh', code('c', ['command'])],
  ['tclsh', code('')],
]);

/** The code an interpreter runs from its arguments, as words; empty when it runs a file or its input. */
export function inlineCode(interpreter: Interpreter, args: readonly ShellWord[]): ShellWord[] {
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: `${interpreter.codeShort}${interpreter.valued ?? ''}`,
    longWithValue: interpreter.codeLong,
  });
  const found: ShellWord[] = [];
  for (const letter of interpreter.codeShort) {
    const value = scanned.shortValues.get(letter);
    if (value) found.push(value);
  }
  for (const name of interpreter.codeLong) {
    const value = optionValue(scanned, '', name);
    if (value) found.push(value);
  }
  return found;
}

/** Why running `name args` has an unknown effect: the code it runs, named. */
export function interpreterReason(
  name: string,
  interpreter: Interpreter,
  args: readonly ShellWord[],
): string {
  if (inlineCode(interpreter, args).length > 0) return `\`${name}\` runs code the analysis does not read`;
  const scanned = scanOptions(args, {
    stopAtOperand: true,
    shortWithValue: interpreter.valued ?? '',
  });
  const [script] = scanned.operands;
  return script && script.value !== '-'
    ? `\`${name}\` runs the script \`${script.raw}\`, which the plan does not hold`
    : `\`${name}\` runs the code it reads from its input`;
}

/** Calls in code that delete files, by language-neutral name, each with its reason. */
export const CODE_DELETIONS: readonly (readonly [RegExp, string])[] = [
  [/\b(?:shutil\.)?rmtree\s*\(/, 'deletes a directory tree (rmtree)'],
  [/\bremove_tree\s*\(/, 'deletes a directory tree (remove_tree)'],
  [/\bos\.(?:remove|unlink|rmdir|removedirs)\s*\(/, 'deletes files (os.remove)'],
  [/\.unlink\s*\(/, 'deletes files (unlink)'],
  [/\bfs(?:\.promises)?\.(?:rm|rmSync|unlink|unlinkSync|rmdir|rmdirSync)\s*\(/, 'deletes files (fs.rm)'],
  [/\b(?:rmSync|unlinkSync|rmdirSync)\s*\(/, 'deletes files (fs.rmSync)'],
  [/\bFileUtils\.(?:rm|rm_r|rm_rf|rm_f|remove_dir|remove_entry)\b/, 'deletes files (FileUtils.rm)'],
  [/\bFile\.delete\b/, 'deletes files (File.delete)'],
  [/(?:^|[\s;{(])unlink\b/, 'deletes files (unlink)'],
];

/** Why code deletes files, or undefined. */
export function codeDeletion(text: string): string | undefined {
  return CODE_DELETIONS.find(([pattern]) => pattern.test(text))?.[1];
}

/** `system("…")`, `os.system('…')`, `execSync("…")`, `popen("…")`: shell text in a string literal. */
const SHELL_CALL =
  /\b(?:system|popen|execSync|exec|spawnSync|check_output|check_call|getoutput|getstatusoutput)\s*\(\s*(["'`])((?:\\.|(?!\1)[^\\])*)\1/g;

/** The shell text code hands to a shell, each as a word to parse again. */
export function embeddedShell(text: string, at: ShellWord['at']): ShellWord[] {
  return [...text.matchAll(SHELL_CALL)].map((match) =>
    literalWord(match[2]!.replace(/\\(["'`\\])/g, '$1'), at),
  );
}
