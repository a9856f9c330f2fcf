// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * Where a value known only at run time may go (issue 28): never in what says what kind of call a
 * step makes, only in a URL's path segment, query value or port; and output shapes, validated
 * against the step's outputs (YAML/JSON and Markdown).
 */
import { describe, expect, it } from 'vitest';
import { outputShapeMismatch } from '../../lib/plan/output-shapes.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

const producer = {
  id: 'meta',
  description: 'Read the release metadata',
  tool: 'shell',
  args: { command: 'echo "i=42" >> "$PLANGATE_OUTPUT"' },
  outputs: ['i'],
  contract: { kind: 'command', command: 'true' },
};
const step = (over: Record<string, unknown>) => ({
  id: 'use',
  description: 'Use the metadata',
  dependsOn: ['meta'],
  contract: { kind: 'assert', expression: 'true' },
  ...over,
});
const planWith = (steps: unknown[], extra: Record<string, unknown> = {}): Plan =>
  PlanSchema.parse({
    id: 'p',
    objective: 'o',
    context: { fn: 'deployer' },
    sizePolicy: { minSteps: 1 },
    steps: [producer, ...steps],
    ...extra,
  });
const problems = async (p: Plan) =>
  (await validatePlan(p, { checkShell: false })).problems.map((x) => `${x.code} ${x.location.pointer}`);

describe('references where they say what kind of call this is', () => {
  it.each([
    ['the tool', { tool: '${steps.meta.i}', args: {} }, '/steps/1/tool'],
    ['the agent target', { target: '${steps.meta.i}', task: 'do it' }, '/steps/1/target'],
    [
      'the agent in args',
      { tool: 'agent', args: { task: 'do it', agent: '${steps.meta.i}' } },
      '/steps/1/args/agent',
    ],
    [
      'the Lambda function',
      { tool: 'lambda', args: { functionName: '${context.fn}' } },
      '/steps/1/args/functionName',
    ],
    [
      'the HTTP method',
      { tool: 'http', args: { method: '${steps.meta.i}', url: 'https://h.example/' } },
      '/steps/1/args/method',
    ],
    [
      'a header name',
      {
        tool: 'http',
        args: { method: 'GET', url: 'https://h.example/', headers: { '${steps.meta.i}': 'v' } },
      },
      '/steps/1/args/headers/${steps.meta.i}',
    ],
    [
      'a lambda contract’s function',
      { tool: 'echo', args: {}, contract: { kind: 'lambda', functionName: 'check-${steps.meta.i}' } },
      '/steps/1/contract/functionName',
    ],
    [
      'an http contract’s header name',
      {
        tool: 'echo',
        args: {},
        contract: { kind: 'http', url: 'https://h.example/', headers: { 'x-${context.fn}': 'v' } },
      },
      '/steps/1/contract/headers/x-${context.fn}',
    ],
    [
      'the rollback tool',
      { tool: 'echo', args: {}, rollback: { tool: '${steps.meta.i}', args: {} } },
      '/steps/1/rollback/tool',
    ],
    [
      'a rollback’s Lambda function',
      { tool: 'echo', args: {}, rollback: { tool: 'lambda', args: { functionName: '${steps.meta.i}' } } },
      '/steps/1/rollback/args/functionName',
    ],
  ])('refuses a reference in %s', async (_, over, pointer) => {
    expect(await problems(planWith([step(over)]))).toContain(`reference-not-allowed ${pointer}`);
  });

  it('refuses one in a contract’s kind or http method through the schema (they are fixed names)', () => {
    for (const contract of [
      { kind: '${steps.meta.i}', command: 'true' },
      { kind: 'http', method: '${steps.meta.i}', url: 'https://h.example/' },
    ])
      expect(
        PlanSchema.safeParse({ id: 'p', objective: 'o', steps: [step({ tool: 'echo', contract })] }).success,
      ).toBe(false);
  });
});

describe('references in URLs', () => {
  const http = (url: string) => step({ tool: 'http', args: { method: 'GET', url } });
  it.each([
    '${steps.meta.i}/api',
    'https://${steps.meta.i}/api',
    'https://api.${steps.meta.i}.example.com/',
    'https://${steps.meta.i}@h.example/',
    'https://h.example:8${steps.meta.i}/',
    'http${steps.meta.i}://h.example/',
    'https://h.example/api?${steps.meta.i}=1',
    'https://h.example/api?a=1&${steps.meta.i}',
    'https://h.example/api#${steps.meta.i}',
  ])('refuses %s, saying where a reference may go', async (url) => {
    const result = await validatePlan(planWith([http(url)]), { checkShell: false });
    const problem = result.problems.find((p) => p.code === 'reference-not-allowed');
    expect(problem?.location.pointer).toBe('/steps/1/args/url');
    expect(problem?.message).toMatch(/path segment .* or a query value/);
  });

  it.each([
    'https://h.example/api/releases/${steps.meta.i}',
    'https://h.example/api/${steps.meta.i}/notes?x=${context.fn}',
    'http://127.0.0.1:${steps.meta.i}/report.json',
  ])('accepts %s', async (url) => {
    expect(await problems(planWith([http(url)]))).toEqual([]);
  });

  it('checks the URLs of contracts, rollbacks and postconditions too', async () => {
    const bad = 'https://${steps.meta.i}/x';
    const p = planWith(
      [
        step({
          tool: 'echo',
          args: {},
          contract: { kind: 'http', url: bad },
          rollback: {
            tool: 'http',
            args: { method: 'POST', url: bad },
            contract: { kind: 'http', url: bad },
          },
        }),
      ],
      {
        postconditions: [
          { id: 'up', description: 'Up', contract: { kind: 'http', url: 'https://${context.fn}/' } },
        ],
      },
    );
    expect((await problems(p)).filter((x) => x.startsWith('reference-not-allowed'))).toEqual([
      'reference-not-allowed /steps/1/contract/url',
      'reference-not-allowed /steps/1/rollback/args/url',
      'reference-not-allowed /steps/1/rollback/contract/url',
      'reference-not-allowed /postconditions/0/contract/url',
    ]);
  });
});

describe('output shapes', () => {
  const shaped = (outputShapes: unknown) => planWith([], { steps: [{ ...producer, outputShapes }] });

  it('accepts a regular expression and a JSON Schema for declared outputs', async () => {
    expect(
      await problems(shaped({ i: { matches: '[0-9]+', schema: { type: 'string', maxLength: 5 } } })),
    ).toEqual([]);
  });

  it.each([
    [{ nope: { matches: 'x' } }, '/steps/0/outputShapes/nope'],
    [{ i: { matches: '(' } }, '/steps/0/outputShapes/i/matches'],
    [{ i: { matches: 'a)(b' } }, '/steps/0/outputShapes/i/matches'],
    [{ i: { schema: { type: 'integr' } } }, '/steps/0/outputShapes/i/schema'],
    [{ i: { schema: { minimun: 1 } } }, '/steps/0/outputShapes/i/schema'],
    [{ i: {} }, '/steps/0/outputShapes/i'],
  ])('refuses %j, located', async (outputShapes, pointer) => {
    expect(await problems(shaped(outputShapes))).toEqual([`invalid-output-shape ${pointer}`]);
  });

  it('refuses unknown keys of a shape through the schema', () => {
    expect(
      PlanSchema.safeParse({
        id: 'p',
        objective: 'o',
        steps: [{ ...producer, outputShapes: { i: { regex: 'x' } } }],
      }).success,
    ).toBe(false);
  });

  it('reads **output_shapes:** in Markdown, located in its fenced block', async () => {
    const text = [
      '# Ship',
      '',
      '## Steps',
      '',
      '### 1. Read the version',
      '**tool:** shell',
      '**args:** {command: "echo version=1 >> $PLANGATE_OUTPUT"}',
      '**outputs:** version',
      '**output_shapes:**',
      '```yaml',
      'version:',
      "  matches: '[0-9]+(\\.[0-9]+){0,2}'",
      'other:',
      "  matches: 'x'",
      '```',
      '**contract:** `true`',
      '',
    ].join('\n');
    const parsed = parsePlanText(text, { filename: 'ship.md' });
    expect(parsed.problems).toEqual([]);
    expect(parsed.plan?.steps[0]?.outputShapes).toEqual({
      version: { matches: '[0-9]+(\\.[0-9]+){0,2}' },
      other: { matches: 'x' },
    });
    const result = await validatePlan(parsed.plan!, { sourceMap: parsed.sourceMap, minSteps: 1 });
    expect(result.problems.map((p) => `${p.location.line}:${p.location.column} ${p.code}`)).toEqual([
      '13:1 invalid-output-shape',
    ]);
  });

  it('says which output does not fit and how, never the value', async () => {
    const shapes = { n: { matches: '[0-9]+' }, id: { schema: { type: 'string', pattern: '^rel-[0-9]+$' } } };
    const secret = '42; touch M';
    const mismatch = await outputShapeMismatch({ n: secret, id: 'rel-1' }, shapes);
    expect(mismatch?.output).toBe('n');
    expect(mismatch?.message).toContain('matches /[0-9]+/');
    expect(mismatch?.message).not.toContain(secret);
    expect((await outputShapeMismatch({ n: '7', id: 'x/../y' }, shapes))?.output).toBe('id');
    expect(await outputShapeMismatch({ n: '7', id: 'rel-9' }, shapes)).toBeUndefined();
    // The whole value must match: a number followed by code is not a number.
    expect((await outputShapeMismatch({ n: '7\n; rm -rf x' }, shapes))?.output).toBe('n');
  });
});
