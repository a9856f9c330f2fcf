/**
 * A command as policy reads it at run time: the step's env values written in place of their
 * expansions, erring towards more effect. Every spelling of "the value makes it destructive"
 * reads as destructive; inside double quotes a value stays one literal.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callClassification } from '../../lib/plan/risks.ts';
import { analyzeShell, writeVariables } from '../../lib/plan/shell/index.ts';
import { createToolRegistry } from '../../lib/plan/tools.ts';

const tools = createToolRegistry();
const values = (entries: Record<string, string>) => new Map(Object.entries(entries));
const destructive = (command: string) =>
  callClassification('shell', { command }, tools).destructive.length > 0;

describe('writeVariables', () => {
  // (A value as the command name, or eval'd, is destructive as written already.)
  it.each([
    ['find scratch-dir $OPT', { OPT: '-delete' }],
    ['find scratch-dir ${OPT}', { OPT: '-delete' }],
    ['find scratch-dir "$OPT"', { OPT: '-delete' }],
    ['find scratch-dir "${OPT}"', { OPT: '-delete' }],
    ['find scratch-dir ${OPT:-}', { OPT: '-delete' }],
    ['find scratch-dir ${OPT-x}', { OPT: '-delete' }],
    ['ls $DIR', { DIR: 'scratch; rm -rf scratch' }],
    ['ls $DIR', { DIR: 'scratch\nrm -rf scratch' }],
    ['ls $DIR', { DIR: '$(rm -rf scratch)' }],
    ['ls $DIR', { DIR: '`rm -rf scratch`' }],
    ['ls $DIR', { DIR: 'scratch && rm -rf scratch' }],
    ["bash -c 'find scratch-dir $OPT'", { OPT: '-delete' }],
    ['sh -c "find scratch-dir $OPT"', { OPT: '-delete' }],
    ['echo "$(find scratch-dir $OPT)"', { OPT: '-delete' }],
    ['find scratch-dir $A$B', { A: '-del', B: 'ete' }],
  ])('%s with %j: not destructive as written, destructive with the value written in', (command, env) => {
    expect(destructive(command)).toBe(false);
    expect(destructive(writeVariables(command, values(env)))).toBe(true);
  });

  it('writes only the names it is given, whole names only', () => {
    expect(writeVariables('echo $OPT $OPTX ${OPTY} $HOME', values({ OPT: 'a' }))).toBe(
      'echo a $OPTX ${OPTY} $HOME',
    );
    expect(writeVariables('echo $OPT', new Map())).toBe('echo $OPT');
  });

  it('escapes a value inside double quotes, writes it as it is elsewhere', () => {
    expect(writeVariables('echo "id=$V" $V', values({ V: 'a"b$c' }))).toBe('echo "id=a\\"b\\$c" a"b$c');
  });

  it('inside double quotes any value stays one literal: nothing of it runs', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const written = writeVariables('printf %s "$V"', values({ V: value.replaceAll('\0', '') }));
        const analysis = analyzeShell(written);
        expect(analysis.syntaxError).toBeUndefined();
        expect(analysis.destructive).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});
