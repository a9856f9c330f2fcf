// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { createToolRegistry } from '../../lib/plan/tools.ts';
import { validatePlan } from '../../lib/plan/validate.ts';
import { type GeneratedPlan, validPlan } from './arbitraries.ts';

const plan = (document: unknown): Plan => PlanSchema.parse(document);
const codes = async (document: unknown, options = {}) =>
  (await validatePlan(plan(document), { checkShell: false, ...options })).problems.map((p) => p.code);

describe('validatePlan (property)', () => {
  it('accepts every generated valid plan', async () => {
    await fc.assert(
      fc.asyncProperty(validPlan, async (document) => {
        const result = await validatePlan(plan(document), { checkShell: false });
        expect(result.problems).toEqual([]);
        expect(result.valid).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  type Mutation = { code: string; apply: (p: GeneratedPlan, k: number) => void };
  const mutations: Mutation[] = [
    {
      code: 'unknown-dependency',
      apply: (p, k) => p.steps[k % p.steps.length]!.dependsOn.push('no-such-step'),
    },
    {
      code: 'dependency-cycle',
      apply: (p, k) => {
        const last = p.steps[p.steps.length - 1]!;
        const first = p.steps[k % (p.steps.length - 1)]!;
        if (!last.dependsOn.includes(first.id)) last.dependsOn.push(first.id);
        first.dependsOn.push(last.id);
      },
    },
    {
      code: 'duplicate-id',
      apply: (p, k) => {
        p.steps[(k % (p.steps.length - 1)) + 1]!.id = p.steps[0]!.id;
      },
    },
    {
      code: 'unknown-tool',
      apply: (p, k) => {
        p.steps[k % p.steps.length]!.tool = 'teleport';
      },
    },
    {
      code: 'invalid-args',
      apply: (p, k) => {
        p.steps[k % p.steps.length]!.args = { nonsense: true };
      },
    },
    { code: 'missing-contract', apply: (p, k) => void delete p.steps[k % p.steps.length]!.contract },
    { code: 'plan-size', apply: (p) => void p.steps.splice(2) },
    {
      code: 'invalid-jsonata',
      apply: (p, k) => {
        p.steps[k % p.steps.length]!.contract = { kind: 'assert', expression: 'output.(' };
      },
    },
    {
      code: 'unknown-context-key',
      apply: (p, k) => {
        p.steps[k % p.steps.length]!.args = { message: '${context.definitelyMissingKey}' };
      },
    },
    {
      code: 'destructive-without-approval',
      apply: (p, k) => {
        const step = p.steps[k % p.steps.length]!;
        step.tool = 'shell';
        step.args = { command: 'rm -rf ./build' };
      },
    },
  ];

  it('catches every mutation of a valid plan', async () => {
    await fc.assert(
      fc.asyncProperty(validPlan, fc.constantFrom(...mutations), fc.nat(), async (document, mutation, k) => {
        const mutated = structuredClone(document);
        mutation.apply(mutated, k);
        const result = await validatePlan(plan(mutated), { checkShell: false });
        expect(result.valid).toBe(false);
        expect(result.problems.map((p) => p.code)).toContain(mutation.code);
      }),
      { numRuns: 200 },
    );
  });
});

const base = () => ({
  id: 'p',
  objective: 'o',
  context: { dir: '/tmp/x' },
  steps: [
    {
      id: 'build',
      description: 'Build the image',
      tool: 'shell',
      args: { command: 'make image' },
      contract: { kind: 'command', command: 'test -f image' },
      outputs: ['tag'],
    },
    {
      id: 'test',
      description: 'Test the image',
      tool: 'shell',
      dependsOn: ['build'],
      args: { command: 'env TAG="${steps.build.tag}" make test' },
      contract: { kind: 'command', command: 'true' },
    },
    {
      id: 'ship',
      description: 'Ship it',
      tool: 'echo',
      dependsOn: ['test'],
      args: { message: 'shipped ${steps.build.tag}' },
      contract: { kind: 'assert', expression: 'true' },
    },
  ],
});

describe('validatePlan checks', () => {
  it('names a cycle in dependency order', async () => {
    const doc = base();
    (doc.steps[0] as { dependsOn?: string[] }).dependsOn = ['test'];
    const result = await validatePlan(plan(doc), { checkShell: false });
    expect(result.problems.map((p) => p.message)).toContain('circular dependency: build → test → build');
  });

  it('accepts outputs of transitive dependencies and rejects those of unrelated steps', async () => {
    expect(await codes(base())).toEqual([]);
    const doc = base();
    doc.steps[2]!.dependsOn = [];
    expect(await codes(doc)).toContain('reference-not-upstream');
  });

  it('refuses environment names that make the shell run code the command does not show, in a step and a rollback', async () => {
    const doc = base();
    doc.steps[0]!.args = { command: 'make image', env: { BASH_ENV: './x.sh', TAG: 'v1' } } as never;
    (doc.steps[1] as Record<string, unknown>).rollback = {
      tool: 'shell',
      args: { command: 'make clean', env: { LD_PRELOAD: '/tmp/x.so', BASH_FUNC_ls: '() { rm -rf .; }' } },
    };
    const result = await validatePlan(plan(doc));
    expect(result.problems.filter((p) => p.code === 'unsafe-env').map((p) => p.location.pointer)).toEqual([
      '/steps/0/args/env/BASH_ENV',
      '/steps/1/rollback/args/env/LD_PRELOAD',
      '/steps/1/rollback/args/env/BASH_FUNC_ls',
    ]);
  });

  it('lets whole-string references stand for any type in tool args', async () => {
    const doc = base();
    doc.steps[1]!.args = { command: 'make test', timeoutSeconds: '${context.dir}' } as never;
    expect(await codes(doc)).toEqual([]);
    doc.steps[1]!.args = { command: 'make test', timeoutSeconds: 'soon' } as never;
    expect(await codes(doc)).toContain('invalid-args');
  });

  it('makes missing contracts and vague steps configurable', async () => {
    const doc = base();
    delete (doc.steps[2] as { contract?: unknown }).contract;
    doc.steps[2]!.description = 'Improve performance';
    expect(await codes(doc)).toEqual(['missing-contract', 'vague-step']);
    expect(await codes(doc, { missingContract: 'off', vagueSteps: 'warning' })).toEqual(['vague-step']);
    const result = await validatePlan(plan(doc), {
      checkShell: false,
      missingContract: 'warning',
      vagueSteps: 'off',
    });
    expect(result.valid).toBe(true);
    doc.steps[2]!.description = 'Improve p95 latency to under 200 ms';
    expect(await codes(doc, { missingContract: 'off' })).toEqual([]);
  });

  it('applies the size policy from options, then the plan, then seed 000', async () => {
    expect(await codes(base(), { minSteps: 4 })).toEqual(['plan-size']);
    expect(await codes({ ...base(), sizePolicy: { minSteps: 5 } })).toEqual(['plan-size']);
    expect(await codes({ ...base(), sizePolicy: { minSteps: 5 } }, { minSteps: 1 })).toEqual([]);
  });

  it('reports shell syntax errors in contracts and shell args, pinpointing the bad ones among many', async () => {
    const doc = base();
    doc.steps[1]!.contract = { kind: 'command', command: 'if true; then echo' };
    expect(await codes(doc, { checkShell: true })).toEqual(['invalid-shell']);
    const many = {
      ...base(),
      sizePolicy: { maxSteps: 500 },
      steps: Array.from({ length: 300 }, (_, i) => ({
        id: `s${i}`,
        description: `Step ${i}`,
        tool: 'shell',
        args: { command: i === 137 ? 'echo (' : `echo ${i}` },
        contract: { kind: 'command', command: i === 250 ? 'case x in' : `test ${i} -ge 0` },
      })),
    };
    const result = await validatePlan(plan(many), { checkShell: true });
    expect(result.problems.map((p) => [p.code, p.location.pointer])).toEqual([
      ['invalid-shell', '/steps/137/args/command'],
      ['invalid-shell', '/steps/250/contract/command'],
    ]);
  });

  it('checks urls, regexes, secrets and malformed references', async () => {
    const doc = base();
    doc.steps[2] = {
      id: 'ship',
      description: 'Ship it',
      tool: 'http',
      dependsOn: ['test'],
      args: { method: 'POST', url: 'ftp://example.com', headers: { auth: '${secrets.token}' } },
      contract: { kind: 'http', url: 'https://example.com/${steps.build}', bodyMatches: '[' },
    } as never;
    expect((await codes(doc)).sort()).toEqual([
      'bad-reference',
      'invalid-regex',
      'invalid-url',
      'undeclared-secret',
    ]);
  });

  it('validates custom tools registered by name with their schema', async () => {
    const tools = createToolRegistry([
      {
        name: 'deploy',
        description: 'Deploy',
        inputSchema: z.strictObject({ env: z.enum(['staging', 'prod']) }),
        destructive: true,
      },
    ]);
    const doc = base();
    doc.steps[2] = {
      id: 'ship',
      description: 'Deploy',
      tool: 'deploy',
      dependsOn: ['test'],
      args: { env: 'qa' },
      contract: { kind: 'assert', expression: 'true' },
    } as never;
    expect((await codes(doc, { tools })).sort()).toEqual(['destructive-without-approval', 'invalid-args']);
    expect(await codes(doc)).toEqual(['unknown-tool']);
    expect(() =>
      createToolRegistry([{ name: 'shell', description: '', inputSchema: z.object({}), destructive: false }]),
    ).toThrow(/twice/);
  });

  it('reports every problem of a plan at once, located', async () => {
    const text = JSON.stringify(
      {
        id: 'p',
        objective: 'o',
        steps: [
          { id: 'a', description: 'A', tool: 'nope', dependsOn: ['zz'] },
          { id: 'a', description: 'B', tool: 'echo', args: {}, dependsOn: ['a'] },
        ],
      },
      null,
      2,
    );
    const parsed = parsePlanText(text, { filename: 'p.json' });
    const result = await validatePlan(parsed.plan!, { sourceMap: parsed.sourceMap });
    expect(result.problems.map((p) => `${p.location.line}:${p.location.column} ${p.code}`)).toEqual([
      '4:3 plan-size',
      '5:5 missing-contract',
      '8:7 unknown-tool',
      '10:9 unknown-dependency',
      '13:5 missing-contract',
      '14:7 duplicate-id',
    ]);
  });

  it('refuses task text (an agent’s or a person’s) whose references cannot resolve, or name a secret', async () => {
    const step = (id: string, over: Record<string, unknown>) => ({
      id,
      description: `Step ${id}`,
      contract: { kind: 'assert', expression: 'true' },
      ...over,
    });
    const result = await validatePlan(
      plan({
        id: 'p',
        objective: 'o',
        secrets: [{ name: 'token', source: 'env', ref: 'TOKEN' }],
        steps: [
          step('build', { tool: 'echo', args: {}, outputs: ['image'] }),
          step('review', {
            target: 'reviewer',
            dependsOn: ['build'],
            task: 'Review ${steps.build.tag} of ${steps.nope.x}',
          }),
          step('deploy', {
            requiresHuman: true,
            dependsOn: ['review'],
            task: 'Deploy ${steps.build.image} with ${secrets.token}',
          }),
        ],
      }),
      { checkShell: false },
    );
    expect(result.problems.map((p) => [p.code, p.location.pointer])).toEqual([
      ['undeclared-output', '/steps/1/task'],
      ['unknown-reference', '/steps/1/task'],
      ['secret-exposed', '/steps/2/task'],
    ]);
  });

  it('refuses task text naming a step that is not a dependency, or an unknown context key, where it is written', async () => {
    const result = await validatePlan(
      plan({
        id: 'p',
        objective: 'o',
        context: { branch: 'main' },
        steps: [
          {
            id: 'build',
            description: 'Build',
            tool: 'echo',
            args: {},
            outputs: ['image'],
            contract: { kind: 'assert', expression: 'true' },
          },
          {
            id: 'review',
            description: 'Review',
            target: 'reviewer',
            task: 'Review ${steps.build.image} on ${context.brnch}',
            contract: { kind: 'assert', expression: 'true' },
          },
          {
            id: 'deploy',
            description: 'Deploy',
            requiresHuman: true,
            dependsOn: ['review', 'build'],
            task: 'Deploy ${steps.build.image} from ${context.branch}',
            contract: { kind: 'assert', expression: 'true' },
          },
        ],
      }),
      { checkShell: false },
    );
    expect(result.problems.map((p) => [p.code, p.location.pointer])).toEqual([
      ['unknown-context-key', '/steps/1/task'],
      ['reference-not-upstream', '/steps/1/task'],
    ]);
    expect(result.problems[1]?.message).toContain('step "build" is not a dependency of step "review"');
  });
});
