/**
 * The planner through the real SDK clients against local servers that speak each provider's wire
 * protocol: a flawed first answer (a cycle, an unknown tool, a missing contract) is sent back with
 * the validator's located problems and fixed in round 2; a model that never gets it right ends in
 * exit 1 with nothing written; hostile answers become problems, never crashes.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { readAnswer } from '../../lib/planner/answer.ts';
import { BedrockProvider } from '../../lib/planner/bedrock-provider.ts';
import { planFromGoal } from '../../lib/planner/loop.ts';
import { OpenAiProvider } from '../../lib/planner/openai-provider.ts';
import { workspaceListing } from '../../lib/planner/prompt.ts';
import { PlannerProviderError } from '../../lib/planner/provider.ts';
import { providerFrom } from '../../lib/planner/providers.ts';
import { runCli } from '../plan/cli-harness.ts';
import {
  FIXED_PLAN,
  FLAWED_PLAN,
  startBedrockServer,
  startOpenAiServer,
  type WireServer,
} from './wire-servers.ts';

const servers: WireServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});
const serve = async (server: Promise<WireServer>) => {
  const started = await server;
  servers.push(started);
  return started;
};

const GOAL = 'Add a health check endpoint to the service and prove it answers';
const bedrock = (url: string) =>
  new BedrockProvider({
    model: 'anthropic.claude-test-v1:0',
    client: {
      endpoint: url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    },
  });

describe.each([
  [
    'openai',
    (url: string) =>
      new OpenAiProvider({ model: 'scripted', baseUrl: `${url}/v1`, apiKey: 'sk-local-test-key' }),
    startOpenAiServer,
  ],
  ['bedrock', bedrock, startBedrockServer],
] as const)('the planning loop on %s', (name, provider, start) => {
  it('converges in 2 rounds: the validator’s located problems go back to the model, verbatim', async () => {
    const server = await serve(
      start([{ plan: FLAWED_PLAN, inputTokens: 1500, outputTokens: 300 }, { plan: FIXED_PLAN }]),
    );
    const rounds: number[] = [];
    const result = await planFromGoal({
      goal: GOAL,
      provider: provider(server.url),
      checkShell: false,
      onRound: (r) => rounds.push(r.round),
    });
    expect(result.outcome).toBe('converged');
    expect(rounds).toEqual([1, 2]);
    expect(result.rounds[0]?.problems.map((p) => p.code)).toEqual(
      expect.arrayContaining(['dependency-cycle', 'unknown-tool', 'missing-contract']),
    );
    expect(result.inputTokens).toBe(2500);
    expect(result.outputTokens).toBe(500);
    // What the model may not decide: the version and auto-approval.
    expect(result.plan?.version).toBe(1);
    expect(result.plan?.approval.allowAutoApprove).toBe(false);
    const second = JSON.stringify(server.requests[1]);
    for (const problem of result.rounds[0]?.problems.filter((p) => p.severity === 'error') ?? [])
      expect(second).toContain(JSON.stringify(problem.message).slice(1, -1));
    expect(second).toContain('/steps/');
    // Structured output was asked for with the plan's JSON Schema.
    const first = JSON.stringify(server.requests[0]);
    expect(first).toContain(name === 'openai' ? '"json_schema"' : '"submit_plan"');
    expect(first).toContain('"dependsOn"');
  });

  it('stops after --max-rounds with the problems still open when the model never gets it right', async () => {
    const server = await serve(start([{ plan: FLAWED_PLAN }]));
    const result = await planFromGoal({
      goal: GOAL,
      provider: provider(server.url),
      maxRounds: 3,
      checkShell: false,
    });
    expect(result.outcome).toBe('max-rounds');
    expect(result.plan).toBeUndefined();
    expect(result.rounds).toHaveLength(3);
    expect(result.problems.some((p) => p.code === 'dependency-cycle')).toBe(true);
  });

  it('treats free text, fenced YAML and garbage as answers to read, not crashes', async () => {
    const fenced = `Here is the plan:\n\`\`\`yaml\n${JSON.stringify(FIXED_PLAN)}\n\`\`\`\nGood luck!`;
    const server = await serve(
      start([{ text: 'I cannot help with that, but here are some thoughts.' }, { text: fenced }]),
    );
    const result = await planFromGoal({ goal: GOAL, provider: provider(server.url), checkShell: false });
    expect(result.outcome).toBe('converged');
    expect(result.rounds[0]?.steps).toBeUndefined();
    expect(result.rounds[0]?.problems.length).toBeGreaterThan(0);
  });
});

describe('providers', () => {
  it('retries throttling (429) and 5xx, then answers', async () => {
    const server = await serve(
      startOpenAiServer([
        { status: 429, error: 'slow down' },
        { status: 503, error: 'busy' },
        { plan: FIXED_PLAN },
      ]),
    );
    const result = await planFromGoal({
      goal: GOAL,
      provider: new OpenAiProvider({ model: 'scripted', baseUrl: `${server.url}/v1`, apiKey: 'sk-x' }),
      checkShell: false,
    });
    expect(result.outcome).toBe('converged');
    expect(server.requests).toHaveLength(3);
  });

  it('says in one line when the key is refused or the model is unknown, without the key', async () => {
    const key = 'sk-very-secret-key-123456';
    const refused = await serve(
      startOpenAiServer([{ status: 401, error: `Incorrect API key provided: ${key}` }]),
    );
    const err = await planFromGoal({
      goal: GOAL,
      provider: new OpenAiProvider({
        model: 'scripted',
        baseUrl: `${refused.url}/v1`,
        apiKey: key,
        maxRetries: 0,
      }),
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(PlannerProviderError);
    expect((err as Error).message).toBe(
      `openai (${refused.url}/v1): the API key was refused (HTTP 401): check OPENAI_API_KEY`,
    );
    const unknown = await serve(startOpenAiServer([{ status: 404, error: 'model not found' }]));
    await expect(
      planFromGoal({
        goal: GOAL,
        provider: new OpenAiProvider({
          model: 'nope',
          baseUrl: `${unknown.url}/v1`,
          apiKey: key,
          maxRetries: 0,
        }),
      }),
    ).rejects.toThrow(`openai (${unknown.url}/v1): unknown model "nope" (HTTP 404)`);
    expect(() => providerFrom({ provider: 'openai', model: 'gpt' }, {})).toThrow(
      /no API key: set OPENAI_API_KEY/,
    );
    expect(() => providerFrom({ provider: 'openai' }, { OPENAI_API_KEY: key })).toThrow(/no model/);
    expect(() => providerFrom({ provider: 'gemini', model: 'x' }, {})).toThrow(/unknown provider "gemini"/);
  });
});

describe('hostile answers', () => {
  it('turns oversized, NUL-laden, prototype-polluting or shapeless answers into located problems', () => {
    const codes = (text: string) =>
      readAnswer({ text, inputTokens: 0, outputTokens: 0 }).problems.map((p) => p.code);
    expect(codes('x'.repeat(10 * 1024 * 1024))).toEqual(['answer-too-large']);
    expect(codes(`{"id":"a\u0000b","objective":"o","steps":[]}`).length).toBeGreaterThan(0);
    expect(codes('{"id":"p","objective":"o","context":{"__proto__":{"polluted":1}},"steps":[]}')).toContain(
      'forbidden-key',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(readAnswer({ inputTokens: 0, outputTokens: 0 }).problems.map((p) => p.code)).toEqual([
      'empty-answer',
    ]);
    fc.assert(
      fc.property(fc.string({ maxLength: 2000, unit: 'binary' }), (text) => {
        const read = readAnswer({ text, inputTokens: 0, outputTokens: 0 });
        expect(read.plan !== undefined || read.problems.length > 0).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('shows the model file names and sizes only, never secrets files, .git or node_modules', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plangate-workspace-'));
    const { mkdirSync, writeFileSync } = await import('node:fs');
    for (const [path, text] of [
      ['src/app.js', 'module.exports = 1'],
      ['.env', 'TOKEN=secret'],
      ['deploy/id_rsa', 'KEY'],
      ['node_modules/x/index.js', ''],
      ['.git/config', ''],
    ] as const) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const snapshot = await workspaceListing(dir);
    expect(snapshot.files).toEqual([{ path: 'src/app.js', bytes: 18 }]);
  });
});

describe('plangate plan', () => {
  const withEnv = async <T>(env: Record<string, string>, work: () => Promise<T>): Promise<T> => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      return await work();
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  };

  it('prints each round and writes a plan that plangate validate accepts', async () => {
    const server = await serve(startOpenAiServer([{ plan: FLAWED_PLAN }, { plan: FIXED_PLAN }]));
    const out = join(mkdtempSync(join(tmpdir(), 'plangate-plan-')), 'plan.yaml');
    const result = await withEnv({ OPENAI_API_KEY: 'sk-cli-key' }, () =>
      runCli([
        'plan',
        GOAL,
        '--provider',
        'openai',
        '--model',
        'scripted',
        '--base-url',
        `${server.url}/v1`,
        '--out',
        out,
        '--no-shell-check',
      ]),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Round 1: 3 steps .*, \d+ problems/);
    expect(result.stdout).toMatch(/dependency-cycle/);
    expect(result.stdout).toMatch(/Round 2: 3 steps .*, valid/);
    expect(result.stdout).not.toContain('sk-cli-key');
    const validated = await runCli(['validate', out, '--no-shell-check']);
    expect(validated.code, validated.stdout).toBe(0);
    expect(readFileSync(out, 'utf8')).toContain('allowAutoApprove: false');
  });

  it('exits 1 and writes nothing when the rounds run out', async () => {
    const server = await serve(startOpenAiServer([{ plan: FLAWED_PLAN }]));
    const out = join(mkdtempSync(join(tmpdir(), 'plangate-plan-')), 'plan.json');
    const result = await runCli([
      'plan',
      GOAL,
      '--base-url',
      `${server.url}/v1`,
      '--model',
      'scripted',
      '--max-rounds',
      '2',
      '--out',
      out,
      '--no-shell-check',
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('No valid plan (max-rounds) after 2 round(s)');
    expect(existsSync(out)).toBe(false);
  });

  it('refuses bad usage with exit 2', async () => {
    expect((await runCli(['plan'])).code).toBe(2);
    expect(
      (
        await runCli([
          'plan',
          GOAL,
          '--out',
          'plan.txt',
          '--model',
          'm',
          '--base-url',
          'http://127.0.0.1:9/v1',
        ])
      ).code,
    ).toBe(2);
  });
});
