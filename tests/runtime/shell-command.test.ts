// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * fillShellCommand and resolveShellCommand: values reach bash through PLANGATE_VALUE_n, never as
 * text. A property through the real bash: for any value without NUL, a command that uses the
 * reference the documented way prints exactly that value and runs nothing else; so does the
 * command as shown (values written in place, escaped), which the platform's policy judges.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SecretSource } from '../../lib/runtime/secrets/secrets.ts';
import { fillShellCommand, resolveShellCommand } from '../../lib/runtime/secrets/shell-command.ts';
import { runProcess } from '../../lib/runtime/shared/process.ts';

const R = '${steps.a.v}';
const values = (value: string) => new Map([[R, value]]);

describe('fillShellCommand', () => {
  it('replaces each reference by its variable, quoted where the shell would split it', () => {
    const filled = fillShellCommand(
      `printf '%s|%s|%s' "x${R}y" ${R} \${context.dir}/f`,
      new Map([
        [R, 'a b'],
        ['${context.dir}', 'd'],
      ]),
    );
    expect(filled.command).toBe(
      `printf '%s|%s|%s' "x\${PLANGATE_VALUE_1}y" "\${PLANGATE_VALUE_1}" "\${PLANGATE_VALUE_2}"/f`,
    );
    expect(filled.env).toEqual({ PLANGATE_VALUE_1: 'a b', PLANGATE_VALUE_2: 'd' });
    expect(filled.shown).toBe(`printf '%s|%s|%s' "xa by" a\\ b d/f`);
    expect(filled.values).toEqual([
      { ref: R, value: 'a b', env: 'PLANGATE_VALUE_1' },
      { ref: '${context.dir}', value: 'd', env: 'PLANGATE_VALUE_2' },
    ]);
  });

  it('is deterministic and leaves a command without references as it is', () => {
    const command = `echo "${R}"; echo ${R}`;
    expect(fillShellCommand(command, values('x'))).toEqual(fillShellCommand(command, values('x')));
    expect(fillShellCommand('echo "$HOME"', new Map())).toEqual({
      command: 'echo "$HOME"',
      env: {},
      values: [],
      shown: 'echo "$HOME"',
    });
  });

  it('refuses a reference where it would be code, located, and never pastes it', () => {
    expect(() =>
      fillShellCommand(`echo ok\n  eval "${R}"`, values('touch M'), 'steps.x.args.command'),
    ).toThrow(
      /steps\.x\.args\.command: \$\{steps\.a\.v\} is in text that `eval` runs as code.*\(at 2:9 of the command\)/,
    );
  });

  it('refuses a value with a NUL byte and a reference without a value', () => {
    expect(() => fillShellCommand(`echo "${R}"`, values('a\0b'))).toThrow(/NUL byte/);
    expect(() => fillShellCommand(`echo "${R}"`, new Map())).toThrow(/has no value/);
  });
});

describe('resolveShellCommand', () => {
  it('looks the values up in the scope; non-strings become JSON', async () => {
    const filled = await resolveShellCommand(`echo "${R}" "\${context.cfg}" "\${secrets.token}"`, {
      steps: { a: { v: 42 } },
      context: { cfg: { a: [1] } },
      secrets: new SecretSource({
        secrets: [{ name: 'token', source: 'env', ref: 'T' }],
        env: { T: 'sekrit' },
      }),
    });
    expect(filled.env).toEqual({
      PLANGATE_VALUE_1: '42',
      PLANGATE_VALUE_2: '{"a":[1]}',
      PLANGATE_VALUE_3: 'sekrit',
    });
    expect(filled.command).not.toContain('sekrit');
  });

  it('refuses a refused place before resolving anything', async () => {
    await expect(resolveShellCommand(`bash -c "${R}"`, { steps: {}, context: {} })).rejects.toThrow(
      /bash -c/,
    );
  });
});

describe('values through the real bash', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plangate-values-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const hostile = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.constantFrom(
      'a=release-42; touch M',
      '$(touch M)',
      '`touch M`',
      'x" ; touch M; echo "',
      "x' ; touch M; echo '",
      'line1\ntouch M\n',
      '\u202e; touch M \u2066',
      '*',
      '-rf',
      '--version',
      '~',
      '${IFS}touch${IFS}M',
      '$((1+1))',
      '\\',
      '',
      ' ',
      '%s%n',
      '!!',
      '{a,b}',
      '[x]',
    ),
    fc
      .array(
        fc.constantFrom(
          ';',
          '$(',
          ')',
          '`',
          '"',
          "'",
          '\n',
          '\\',
          '*',
          '?',
          ' ',
          'touch M',
          '-rf',
          '\u202e',
          '&',
          '|',
          '>M',
          '$',
        ),
      )
      .map((parts) => parts.join('')),
  );

  it.each([
    ['quoted', `printf '%s' "${R}"`],
    ['a bare word', `printf '%s' ${R}`],
  ])('%s: prints exactly the value and creates no file', async (_, command) => {
    await fc.assert(
      fc.asyncProperty(
        hostile.filter((value) => !value.includes('\0')),
        async (value) => {
          const filled = fillShellCommand(command, values(value));
          const result = await runProcess({ command: filled.command, env: filled.env, cwd: dir });
          expect(result.stderr).toBe('');
          expect(result.stdout).toBe(value);
          expect(readdirSync(dir)).toEqual([]);
          // The command as shown (each value written in its place, escaped) means the same to bash.
          const shown = await runProcess({ command: filled.shown, cwd: dir });
          expect(shown.stdout).toBe(value);
          expect(readdirSync(dir)).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
    expect(existsSync(join(dir, 'M'))).toBe(false);
  });
});
