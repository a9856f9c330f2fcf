/**
 * Asking the model how to recover (seed 001's third strategy), through the real SDK clients against
 * local servers that speak each provider's wire protocol. The answer is hostile input: only a
 * suggestion that fits the schema is taken, and one that changes the plan only if the new version
 * passes the validator; everything else is refused, saying why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { BedrockProvider } from '../../lib/planner/bedrock-provider.ts';
import { OpenAiProvider } from '../../lib/planner/openai-provider.ts';
import { adviseRecovery, MAX_SUGGESTION_BYTES } from '../../lib/planner/recovery.ts';
import type { RecoveryAdviceRequest } from '../../lib/runtime/payloads/index.ts';
import { startBedrockServer, startOpenAiServer, type WireServer } from './wire-servers.ts';

const servers: WireServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const PLAN = PlanSchema.parse({
  id: 'release',
  version: 4,
  objective: 'Build and publish the release',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'build',
      description: 'Build the archive',
      tool: 'shell',
      args: { command: 'tar czf out.tgz src' },
      contract: { kind: 'command', command: 'test -f out.tgz' },
    },
    {
      id: 'publish',
      description: 'Publish the archive',
      dependsOn: ['build'],
      tool: 'shell',
      args: { command: 'publish out.tgz --channel stable' },
      contract: { kind: 'command', command: 'test -f published.txt' },
    },
  ],
});

const REQUEST: RecoveryAdviceRequest = {
  plan: { id: 'release', version: 4, digest: 'sha256:abc' },
  executionId: 'arn:aws:states:us-east-1:123456789012:execution:plangate-release:r1',
  stepId: 'publish',
  failure: {
    failureClass: 'unknown',
    error: 'Plangate.Unknown',
    message: 'publish: not logged in',
    phase: 'run',
  },
  attempt: 1,
};

const LOGIN_STEP = {
  id: 'login',
  description: 'Log in to the registry',
  tool: 'shell',
  args: { command: 'registry-login --token-file ~/.registry' },
  contract: { kind: 'command', command: 'test -f ~/.registry-session' },
};

describe.each([
  [
    'openai',
    (url: string) => new OpenAiProvider({ model: 'scripted', baseUrl: `${url}/v1`, apiKey: 'sk-local-test' }),
    startOpenAiServer,
  ],
  [
    'bedrock',
    (url: string) =>
      new BedrockProvider({
        model: 'anthropic.claude-test-v1:0',
        client: {
          endpoint: url,
          region: 'us-east-1',
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
          maxAttempts: 1,
        },
      }),
    startBedrockServer,
  ],
] as const)('recovery advice on %s', (_name, provider, start) => {
  it('inserts recovery steps before the failed step: a new, valid version that depends on them', async () => {
    const server = await start([
      { plan: { strategy: 'insert_steps', reasons: 'It needs a login first.', steps: [LOGIN_STEP] } },
    ]);
    servers.push(server);
    const advised = await adviseRecovery({ provider: provider(server.url), plan: PLAN, request: REQUEST });
    if ('refused' in advised) throw new Error(advised.refused);
    expect(advised.advice.suggestion.strategy).toBe('insert_steps');
    const revised = advised.revised?.plan;
    expect(revised?.version).toBe(5);
    expect(revised?.approval.allowAutoApprove).toBe(false);
    expect(revised?.steps.map((s) => [s.id, s.dependsOn])).toEqual([
      ['build', []],
      ['login', ['build']],
      ['publish', ['build', 'login']],
    ]);
    expect(advised.advice.revision).toEqual({ version: 5, digest: `sha256:${advised.revised?.digest}` });
    // What the model was told: the failure, the plan and the four strategies.
    const asked = JSON.stringify(server.requests[0]);
    expect(asked).toContain('publish: not logged in');
    expect(asked).toContain('insert_steps');
    expect(asked).toContain('tar czf out.tgz src');
  });

  it('refuses a change that does not make a valid plan, naming the problems', async () => {
    const server = await start([
      {
        plan: {
          strategy: 'insert_steps',
          reasons: 'Teleport the archive.',
          steps: [{ ...LOGIN_STEP, tool: 'teleport' }],
        },
      },
    ]);
    servers.push(server);
    const advised = await adviseRecovery({ provider: provider(server.url), plan: PLAN, request: REQUEST });
    expect(advised).toMatchObject({ refused: expect.stringContaining('does not make a valid plan') });
    expect('refused' in advised && advised.refused).toContain('unknown tool "teleport"');
  });
});

describe('a hostile answer is refused, never taken', () => {
  const openai = (url: string) =>
    new OpenAiProvider({ model: 'scripted', baseUrl: `${url}/v1`, apiKey: 'sk-local-test' });

  it.each([
    ['prose', { text: 'You should probably retry.' }, 'the answer is not a JSON object'],
    ['another strategy', { plan: { strategy: 'exec', reasons: 'x' } }, '/strategy'],
    [
      'a field it may not have',
      { plan: { strategy: 'abort', reasons: 'x', command: 'rm -rf /' } },
      'not a recovery suggestion',
    ],
    ['no reasons', { plan: { strategy: 'skip', reasons: '   ' } }, '/reasons'],
    [
      // zod drops the key; the change is then empty.
      'a prototype key',
      { text: '{"strategy":"retry_with_args","reasons":"x","args":{"__proto__":{"polluted":true}}}' },
      '/args',
    ],
    ['an empty change', { plan: { strategy: 'retry_with_args', reasons: 'x', args: {} } }, '/args'],
    [
      'too many steps',
      {
        plan: { strategy: 'insert_steps', reasons: 'x', steps: Array.from({ length: 6 }, () => LOGIN_STEP) },
      },
      '/steps',
    ],
    ['a huge answer', { text: 'x'.repeat(MAX_SUGGESTION_BYTES + 1) }, `must fit in ${MAX_SUGGESTION_BYTES}`],
  ] as const)('%s', async (_what, reply, why) => {
    const server = await startOpenAiServer([reply]);
    servers.push(server);
    const advised = await adviseRecovery({ provider: openai(server.url), plan: PLAN, request: REQUEST });
    expect(advised).toMatchObject({ provider: 'openai', model: 'scripted' });
    expect('refused' in advised ? advised.refused : 'taken').toContain(why);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('says so when the model cannot be asked', async () => {
    const server = await startOpenAiServer([{ status: 401, error: 'bad key' }]);
    servers.push(server);
    const advised = await adviseRecovery({ provider: openai(server.url), plan: PLAN, request: REQUEST });
    expect('refused' in advised && advised.refused).toMatch(
      /^the model could not be asked: openai \(.*\): the API key was refused/,
    );
  });
});
