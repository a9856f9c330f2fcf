// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * analyzeShell against the shared corpus (every destructive command found for its reason, no
 * ordinary command flagged), where findings and syntax errors are located, and a property: it never
 * throws and stays fast on arbitrary text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DESTRUCTIVE_COMMANDS, HARMLESS_COMMANDS } from '../../bench/reliability/shell-corpus.ts';
import { analyzeShell, MAX_SHELL_NESTING } from '../../lib/plan/shell/index.ts';

describe('analyzeShell on the corpus', () => {
  it('has at least 60 destructive and 60 harmless commands', () => {
    expect(DESTRUCTIVE_COMMANDS.length).toBeGreaterThanOrEqual(60);
    expect(HARMLESS_COMMANDS.length).toBeGreaterThanOrEqual(60);
  });

  it.each(DESTRUCTIVE_COMMANDS.map((s) => [s.shows, s] as const))('finds %s', (_, s) => {
    const reasons = analyzeShell(s.command).destructive.map((f) => f.reason);
    expect(
      reasons.some((reason) => reason.includes(s.reason)),
      reasons.join(' | '),
    ).toBe(true);
  });

  it.each(HARMLESS_COMMANDS)('does not flag %s', (command) => {
    expect(analyzeShell(command).destructive).toEqual([]);
  });
});

describe('analyzeShell findings', () => {
  it('says what, why and where (1-based, in the command)', () => {
    expect(analyzeShell('mkdir -p out\n  "rm" -rf out').destructive).toEqual([
      { command: '"rm" -rf out', reason: 'deletes recursively', line: 2, column: 3 },
    ]);
  });

  it('locates a finding inside a nested string where the string is verbatim', () => {
    const [finding] = analyzeShell(`echo ok && bash -c 'ls; rm -f x'`).destructive;
    expect(finding).toMatchObject({ command: 'rm -f x', line: 1, column: 25 });
  });

  it('shows plan references as written', () => {
    const [finding] = analyzeShell('rm -rf "${context.workDir}/out"').destructive;
    expect(finding?.command).toBe('rm -rf "${context.workDir}/out"');
  });

  it('reads bash -c strings at most MAX_SHELL_NESTING deep', () => {
    let command = 'rm -rf out';
    for (let i = 0; i < MAX_SHELL_NESTING + 2; i++) command = `bash -c ${JSON.stringify(command)}`;
    const reasons = analyzeShell(command).destructive.map((f) => f.reason);
    expect(reasons.some((r) => r.includes(`nested more than ${MAX_SHELL_NESTING} deep`))).toBe(true);
  });

  it('never takes a lookup, a script file or text for a run', () => {
    for (const command of ['command -v rm', 'bash ./clean.sh', 'echo rm -rf /', 'grep -r "DROP TABLE" sql/'])
      expect(analyzeShell(command).destructive).toEqual([]);
  });
});

describe('analyzeShell syntax errors', () => {
  it.each([
    ['if true; then echo; fi fi', 'unexpected `fi`', 1, 24],
    ['if true; then echo', '`if` is not closed before the end of the command', 1, 1],
    ["echo ok\necho 'unterminated", "`'` is not closed before the end of the command", 2, 6],
    ['echo a;;', 'unexpected `;;`', 1, 7],
    ['done', 'unexpected `done`', 1, 1],
    ['a && && b', 'unexpected `&&`', 1, 3],
  ])('%j: %s at %i:%i', (command, message, line, column) => {
    const analysis = analyzeShell(command);
    expect(analysis.syntaxError).toEqual({ message, line, column });
    // What cannot be read counts as destructive.
    expect(analysis.destructive.some((f) => f.reason.startsWith('cannot tell what runs'))).toBe(true);
  });

  it('accepts plan references, which are filled in as text before the command runs', () => {
    expect(
      analyzeShell('echo ${steps.build.dir} ${context.a.b} ${secrets.token}').syntaxError,
    ).toBeUndefined();
  });
});

describe('analyzeShell (property)', () => {
  const hostile = fc.oneof(
    fc.string({ maxLength: 400, unit: 'binary' }),
    fc
      .array(
        fc.constantFrom('$(', '`', '"', "'", '<<X\n', '{ ', '( ', 'if ', 'bash -c ', '\\', '\u0000', 'rm '),
        {
          maxLength: 300,
        },
      )
      .map((parts) => parts.join('')),
    fc.integer({ min: 1, max: 3_000 }).map((n) => `${'$('.repeat(n)}rm x${')'.repeat(n)}`),
  );

  it('never throws, and answers quickly, for arbitrary text', () => {
    fc.assert(
      fc.property(hostile, (command) => {
        const started = performance.now();
        const analysis = analyzeShell(command, { timeBudgetMs: 2_000 });
        expect(Array.isArray(analysis.destructive)).toBe(true);
        // Generous for a shared machine; a runaway parse would take far longer.
        expect(performance.now() - started).toBeLessThan(5_000);
      }),
      { numRuns: 300 },
    );
  });

  it('gives up on pathological text within its time budget, counting it as destructive', () => {
    const analysis = analyzeShell('<<X\n'.repeat(20_000), { timeBudgetMs: 50 });
    expect(analysis.destructive.map((f) => f.reason)).toContain(
      'cannot tell what runs: it is too complex to analyse in time',
    );
  });
});
