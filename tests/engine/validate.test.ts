import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_DEFINITION_BYTES, validateDefinition } from '../../lib/engine/validate/index.ts';
import { CONFORMANCE_CASES } from '../conformance-dir.ts';

const require = createRequire(import.meta.url);
const aslValidator = require('asl-validator') as (definition: unknown) => { isValid: boolean };

const CASES_DIR = CONFORMANCE_CASES;
const caseFiles = readdirSync(CASES_DIR).filter((file) => file.endsWith('.json'));
const definitions = caseFiles.map((file) => ({
  file,
  definition: (JSON.parse(readFileSync(`${CASES_DIR}/${file}`, 'utf8')) as { definition: unknown })
    .definition,
}));

const pass = (next?: string) => (next ? { Type: 'Pass', Next: next } : { Type: 'Pass', End: true });
const machine = (states: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ StartAt: Object.keys(states)[0], States: states, ...extra });

/** Broken definitions, each with the pointer (and code) AWS would report. */
const broken: { name: string; definition: string; location: string; code?: string }[] = [
  {
    name: 'dangling Next',
    definition: machine({ Build: pass('Biuld'), End: pass() }),
    location: '/States/Build/Next',
    code: 'MISSING_TRANSITION_TARGET',
  },
  {
    name: 'missing StartAt target',
    definition: JSON.stringify({ StartAt: 'Nope', States: { A: pass() } }),
    location: '/StartAt',
    code: 'MISSING_TRANSITION_TARGET',
  },
  {
    name: 'unreachable state',
    definition: machine({ A: pass(), B: pass() }),
    location: '/States/B',
    code: 'MISSING_TRANSITION_TARGET',
  },
  {
    name: 'no terminal state',
    definition: machine({ A: pass('B'), B: pass('A') }),
    location: '',
    code: 'MISSING_END_STATE',
  },
  {
    name: 'Next and End',
    definition: machine({ A: { Type: 'Pass', Next: 'B', End: true }, B: pass() }),
    location: '/States/A',
  },
  {
    name: 'neither Next nor End',
    definition: machine({ A: { Type: 'Pass' }, B: { Type: 'Succeed' } }),
    location: '/States/A',
  },
  {
    name: 'unknown state type',
    definition: machine({ A: { Type: 'Sleep', End: true } }),
    location: '/States/A/Type',
  },
  {
    name: 'JSONPath field in a JSONata state',
    definition: machine({ A: { Type: 'Pass', QueryLanguage: 'JSONata', InputPath: '$.x', End: true } }),
    location: '/States/A/InputPath',
  },
  {
    name: 'JSONata field in a JSONPath state',
    definition: machine({ A: { Type: 'Pass', Output: {}, End: true } }),
    location: '/States/A/Output',
  },
  {
    name: 'Parameters in a JSONata machine',
    definition: machine(
      { A: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', Parameters: {}, End: true } },
      { QueryLanguage: 'JSONata' },
    ),
    location: '/States/A/Parameters',
  },
  {
    name: 'bad query language',
    definition: machine({ A: { Type: 'Pass', QueryLanguage: 'XPath', End: true } }),
    location: '/States/A/QueryLanguage',
  },
  {
    name: 'JSONPath state in a JSONata machine',
    definition: machine(
      { A: { Type: 'Pass', QueryLanguage: 'JSONPath', End: true } },
      { QueryLanguage: 'JSONata' },
    ),
    location: '/States/A/QueryLanguage',
  },
  {
    name: 'bad InputPath',
    definition: machine({ A: { Type: 'Pass', InputPath: 'x.y', End: true } }),
    location: '/States/A/InputPath',
  },
  {
    name: 'wildcard in ResultPath',
    definition: machine({ A: { Type: 'Pass', ResultPath: '$.a[*]', End: true } }),
    location: '/States/A/ResultPath',
  },
  {
    name: 'context in ResultPath',
    definition: machine({ A: { Type: 'Pass', ResultPath: '$$.Execution', End: true } }),
    location: '/States/A/ResultPath',
  },
  {
    name: 'bad .$ path',
    definition: machine({ A: { Type: 'Pass', Parameters: { 'x.$': 'nope' }, End: true } }),
    location: '/States/A/Parameters/x.$',
  },
  {
    name: 'non-string .$ value',
    definition: machine({ A: { Type: 'Pass', Parameters: { nested: { 'x.$': 3 } }, End: true } }),
    location: '/States/A/Parameters/nested/x.$',
  },
  {
    name: 'unknown intrinsic',
    definition: machine({ A: { Type: 'Pass', Parameters: { 'x.$': 'States.Nope($.a)' }, End: true } }),
    location: '/States/A/Parameters/x.$',
  },
  {
    name: 'intrinsic arity',
    definition: machine({ A: { Type: 'Pass', Parameters: { 'x.$': 'States.MathAdd(1)' }, End: true } }),
    location: '/States/A/Parameters/x.$',
  },
  {
    name: 'unclosed intrinsic',
    definition: machine({ A: { Type: 'Pass', Parameters: { 'x.$': "States.Format('{}', $.a" }, End: true } }),
    location: '/States/A/Parameters/x.$',
  },
  {
    name: 'bad JSONata',
    definition: machine(
      { A: { Type: 'Pass', Output: '{% $x + %}', End: true } },
      { QueryLanguage: 'JSONata' },
    ),
    location: '/States/A/Output',
  },
  {
    name: 'bad JSONata in Arguments',
    definition: machine(
      {
        A: {
          Type: 'Task',
          Resource: 'arn:aws:states:::lambda:invoke',
          Arguments: { P: { q: '{% ( %}' } },
          End: true,
        },
      },
      { QueryLanguage: 'JSONata' },
    ),
    location: '/States/A/Arguments/P/q',
  },
  {
    name: 'state name too long',
    definition: machine({ ['x'.repeat(81)]: pass() }),
    location: `/States/${'x'.repeat(81)}`,
  },
  { name: 'control character in name', definition: machine({ 'a\tb': pass() }), location: '/States/a\tb' },
  {
    name: 'pointer escaping',
    definition: machine({ 'a/b': pass('c~d'), 'c~d': { Type: 'Pass', Nxt: 1, End: true } }),
    location: '/States/c~0d/Nxt',
  },
  {
    name: 'Wait without duration',
    definition: machine({ W: { Type: 'Wait', End: true } }),
    location: '/States/W',
  },
  {
    name: 'Wait with two durations',
    definition: machine({ W: { Type: 'Wait', Seconds: 1, SecondsPath: '$.s', End: true } }),
    location: '/States/W',
  },
  {
    name: 'Wait with a bad timestamp',
    definition: machine({ W: { Type: 'Wait', Timestamp: 'tomorrow', End: true } }),
    location: '/States/W/Timestamp',
  },
  {
    name: 'negative TimeoutSeconds',
    definition: machine({
      T: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', TimeoutSeconds: 0, End: true },
    }),
    location: '/States/T/TimeoutSeconds',
  },
  {
    name: 'heartbeat not below timeout',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        TimeoutSeconds: 5,
        HeartbeatSeconds: 5,
        End: true,
      },
    }),
    location: '/States/T/HeartbeatSeconds',
  },
  {
    name: 'Task without Resource',
    definition: machine({ T: { Type: 'Task', End: true } }),
    location: '/States/T/Resource',
  },
  {
    name: 'States.ALL not alone',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        Retry: [{ ErrorEquals: ['States.ALL', 'X'] }],
        End: true,
      },
    }),
    location: '/States/T/Retry/0/ErrorEquals',
  },
  {
    name: 'States.ALL not last',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        Catch: [
          { ErrorEquals: ['States.ALL'], Next: 'F' },
          { ErrorEquals: ['X'], Next: 'F' },
        ],
        End: true,
      },
      F: { Type: 'Fail' },
    }),
    location: '/States/T/Catch/0/ErrorEquals',
  },
  {
    name: 'bad BackoffRate',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        Retry: [{ ErrorEquals: ['X'], BackoffRate: 0.5 }],
        End: true,
      },
    }),
    location: '/States/T/Retry/0/BackoffRate',
  },
  {
    name: 'dangling Catch Next',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        Catch: [{ ErrorEquals: ['X'], Next: 'Gone' }],
        End: true,
      },
    }),
    location: '/States/T/Catch/0/Next',
  },
  {
    name: 'empty ErrorEquals',
    definition: machine({
      T: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        Retry: [{ ErrorEquals: [] }],
        End: true,
      },
    }),
    location: '/States/T/Retry/0/ErrorEquals',
  },
  {
    name: 'choice rule without operator',
    definition: machine({
      C: { Type: 'Choice', Choices: [{ Variable: '$.x', Next: 'D' }], Default: 'D' },
      D: pass(),
    }),
    location: '/States/C/Choices/0',
  },
  {
    name: 'choice rule with wrong operand type',
    definition: machine({
      C: { Type: 'Choice', Choices: [{ Variable: '$.x', NumericEquals: '1', Next: 'D' }] },
      D: pass(),
    }),
    location: '/States/C/Choices/0/NumericEquals',
  },
  {
    name: 'nested choice rule with Next',
    definition: machine({
      C: { Type: 'Choice', Choices: [{ And: [{ Variable: '$.x', IsPresent: true, Next: 'D' }], Next: 'D' }] },
      D: pass(),
    }),
    location: '/States/C/Choices/0/And/0/Next',
  },
  {
    name: 'dangling Default',
    definition: machine({
      C: { Type: 'Choice', Choices: [{ Variable: '$.x', IsNull: true, Next: 'D' }], Default: 'X' },
      D: pass(),
    }),
    location: '/States/C/Default',
  },
  {
    name: 'JSONata choice without Condition',
    definition: machine(
      { C: { Type: 'Choice', Choices: [{ Next: 'D' }] }, D: pass() },
      { QueryLanguage: 'JSONata' },
    ),
    location: '/States/C/Choices/0/Condition',
  },
  {
    name: 'Choice with Next',
    definition: machine({
      C: { Type: 'Choice', Choices: [{ Variable: '$.x', IsNull: true, Next: 'D' }], Next: 'D' },
      D: pass(),
    }),
    location: '/States/C/Next',
  },
  {
    name: 'Parallel branch dangling Next',
    definition: machine({
      P: {
        Type: 'Parallel',
        Branches: [
          { StartAt: 'A', States: { A: pass() } },
          { StartAt: 'B', States: { B: pass('Out') } },
        ],
        Next: 'Out',
      },
      Out: pass(),
    }),
    location: '/States/P/Branches/1/States/B/Next',
  },
  {
    name: 'Map nested unreachable',
    definition: machine({
      M: { Type: 'Map', ItemProcessor: { StartAt: 'A', States: { A: pass(), Z: pass() } }, End: true },
    }),
    location: '/States/M/ItemProcessor/States/Z',
  },
  {
    name: 'Map with bad tolerated percentage',
    definition: machine({
      M: {
        Type: 'Map',
        ToleratedFailurePercentage: 101,
        ItemProcessor: { StartAt: 'A', States: { A: pass() } },
        End: true,
      },
    }),
    location: '/States/M/ToleratedFailurePercentage',
  },
  {
    name: 'Map with wrong processor mode',
    definition: machine({
      M: {
        Type: 'Map',
        ItemProcessor: { ProcessorConfig: { Mode: 'FAST' }, StartAt: 'A', States: { A: pass() } },
        End: true,
      },
    }),
    location: '/States/M/ItemProcessor/ProcessorConfig/Mode',
  },
  {
    name: 'duplicate state name across branches',
    definition: machine({
      P: {
        Type: 'Parallel',
        Branches: [
          { StartAt: 'A', States: { A: pass() } },
          { StartAt: 'A', States: { A: pass() } },
        ],
        End: true,
      },
    }),
    location: '/States/P/Branches/1/States/A',
  },
  { name: 'unknown top-level field', definition: machine({ A: pass() }, { Stats: {} }), location: '/Stats' },
  {
    name: 'bad Assign variable',
    definition: machine({ A: { Type: 'Pass', Assign: { '1x': 1 }, End: true } }),
    location: '/States/A/Assign/1x',
  },
  {
    name: 'Fail with Error and ErrorPath',
    definition: machine({ F: { Type: 'Fail', Error: 'E', ErrorPath: '$.e' } }),
    location: '/States/F',
  },
  { name: 'empty States', definition: JSON.stringify({ StartAt: 'A', States: {} }), location: '/States' },
  { name: 'not an object', definition: '[1, 2]', location: '' },
];

describe('validateDefinition', () => {
  it.each(definitions)('accepts the AWS-recorded definition $file', ({ definition }) => {
    expect(validateDefinition(JSON.stringify(definition))).toEqual([]);
  });

  it.each(broken)('refuses $name at $location', ({ definition, location, code }) => {
    const problems = validateDefinition(definition);
    expect(problems.map((problem) => problem.location)).toContain(location);
    if (code) expect(problems.find((problem) => problem.location === location)?.code).toBe(code);
    for (const problem of problems) expect(problem.message.length).toBeGreaterThan(0);
  });

  it('agrees with asl-validator that the broken JSONPath definitions it understands are invalid', () => {
    const understood = broken.filter(({ name }) =>
      /dangling|missing StartAt|unknown state type|Task without Resource|neither Next/.test(name),
    );
    expect(understood.length).toBeGreaterThan(4);
    for (const { definition } of understood) expect(aslValidator(JSON.parse(definition)).isValid).toBe(false);
  });

  it('locates a JSON syntax error by line and column', () => {
    const [problem, ...rest] = validateDefinition('{\n  "StartAt": "A",\n  "States": {,}\n}');
    expect(rest).toEqual([]);
    expect(problem).toMatchObject({ code: 'INVALID_JSON_DESCRIPTION', location: '' });
    expect(problem?.message).toContain('line 3, column 14');
  });

  it('refuses a definition over 1,048,576 bytes without parsing it', () => {
    const padding = 'x'.repeat(MAX_DEFINITION_BYTES);
    const problems = validateDefinition(machine({ A: pass() }, { Comment: padding }));
    expect(problems).toEqual([expect.objectContaining({ code: 'DEFINITION_TOO_LARGE' })]);
  });

  it('reports every problem, not only the first', () => {
    const problems = validateDefinition(
      machine({ A: { Type: 'Pass', Next: 'X', Bogus: 1 }, B: { Type: 'Wait', End: true } }),
    );
    expect(problems.map((problem) => problem.location)).toEqual(
      expect.arrayContaining(['/States/A/Next', '/States/A/Bogus', '/States/B']),
    );
  });

  it('never throws on mutated definitions, only returns problems', () => {
    const samples = definitions.slice(0, 60).map(({ definition }) => JSON.stringify(definition));
    fc.assert(
      fc.property(
        fc.constantFrom(...samples),
        fc.array(fc.tuple(fc.nat(), fc.nat(3), fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 4 }),
        (text, edits) => {
          let mutated = text;
          for (const [position, kind, insert] of edits) {
            const at = position % (mutated.length + 1);
            mutated =
              kind === 0
                ? mutated.slice(0, at) + mutated.slice(at + 1)
                : kind === 1
                  ? mutated.slice(0, at) + insert + mutated.slice(at)
                  : kind === 2
                    ? mutated.slice(0, at) + insert + mutated.slice(at + insert.length)
                    : mutated.slice(0, at);
          }
          const problems = validateDefinition(mutated);
          expect(Array.isArray(problems)).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('never throws on structurally mutated definitions', () => {
    const values = fc.oneof(
      fc.constant(null),
      fc.integer(),
      fc.string(),
      fc.boolean(),
      fc.constant([]),
      fc.constant({}),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...definitions.slice(0, 60).map((d) => d.definition)),
        fc.array(fc.tuple(fc.nat(), values), { maxLength: 3 }),
        (definition, edits) => {
          const copy = structuredClone(definition) as Record<string, unknown>;
          for (const [index, value] of edits) {
            const nodes: Record<string, unknown>[] = [];
            const walk = (node: unknown): void => {
              if (node && typeof node === 'object') {
                nodes.push(node as Record<string, unknown>);
                for (const child of Object.values(node)) walk(child);
              }
            };
            walk(copy);
            const target = nodes[index % nodes.length];
            const keys = target ? Object.keys(target) : [];
            const key = keys[index % Math.max(keys.length, 1)];
            if (target && key !== undefined) target[key] = value;
          }
          expect(Array.isArray(validateDefinition(JSON.stringify(copy)))).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });
});
