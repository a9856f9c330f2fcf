/**
 * The planner fails clearly, through the real CLI and SDK clients: one line naming the provider,
 * the URL and the cause, exit 2, for a server that answers HTML, hangs, or is down; a token
 * budget that is never overspent; --base-url refused for Bedrock.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeServer, listenOnLoopback } from '../../lib/aws-local/listen.ts';
import { planFromGoal } from '../../lib/planner/loop.ts';
import { OpenAiProvider } from '../../lib/planner/openai-provider.ts';
import { runCli } from '../plan/cli-harness.ts';
import { FLAWED_PLAN, startOpenAiServer, type WireServer } from './wire-servers.ts';

const GOAL = 'Add a health check endpoint to the service and prove it answers';
const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

/** A server on loopback answering every request with `handle`. */
async function serverWith(handle: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handle);
  const url = await listenOnLoopback(server);
  servers.push({ close: () => closeServer(server) });
  return url;
}

const plan = (...args: string[]) =>
  runCli(['plan', GOAL, '--provider', 'openai', '--model', 'scripted', '--out', '/tmp/never.yaml', ...args]);

/** The CLI's one line about the failure: it names the provider and URL, and nothing else is printed to stderr. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] as string;
}

describe('plangate plan, when the provider fails', () => {
  it('says the answer is not a Chat Completions response when a 200 carries HTML', async () => {
    const url = await serverWith((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Please sign in</body></html>');
    });
    const result = await plan('--base-url', `${url}/v1`);
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toMatch(
      new RegExp(
        `^plangate plan: openai \\(${url}/v1\\): the answer is not a Chat Completions response: .*Please sign in`,
      ),
    );
  });

  it('gives up on a hanging server after the request timeout, and says so', async () => {
    const url = await serverWith(() => {
      // Never answers.
    });
    const result = await plan('--base-url', `${url}/v1`, '--request-timeout', '1');
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toBe(
      `plangate plan: openai (${url}/v1): no answer: timeout after 1 s per request`,
    );
  }, 30_000);

  it('names the URL and the cause when nothing listens there', async () => {
    const url = await serverWith(() => {});
    await servers.pop()?.close();
    const result = await plan('--base-url', `${url}/v1`);
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toBe(
      `plangate plan: openai (${url}/v1): cannot connect: connection refused (ECONNREFUSED): is the server running?`,
    );
  }, 30_000);

  it('refuses --base-url for Bedrock, naming the variable that points it elsewhere', async () => {
    const result = await runCli([
      'plan',
      GOAL,
      '--provider',
      'bedrock',
      '--model',
      'm',
      '--base-url',
      'http://x',
    ]);
    expect(result.code).toBe(2);
    expect(oneLine(result.stderr)).toMatch(
      /--base-url is for OpenAI-compatible servers.*AWS_ENDPOINT_URL_BEDROCK_RUNTIME/,
    );
  });
});

describe('plangate run --goal', () => {
  it('takes every option of plangate plan, and fails as clearly', async () => {
    const url = await serverWith(() => {});
    await servers.pop()?.close();
    const store = mkdtempSync(join(tmpdir(), 'plangate-goal-options-'));
    const result = await runCli([
      'run',
      '--goal',
      GOAL,
      '--store',
      store,
      ...['--provider', 'openai', '--model', 'scripted', '--base-url', `${url}/v1`],
      ...['--workspace', '.', '--context', 'package.json', '--max-rounds', '2'],
      ...['--token-budget', '100000', '--time-budget', '30', '--request-timeout', '5', '--no-shell-check'],
    ]);
    expect(result.stderr).not.toMatch(/Unknown option|Usage:/);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`openai (${url}/v1): cannot connect: connection refused (ECONNREFUSED)`);
  }, 60_000);
});

describe('the token budget', () => {
  it('is checked before a round: the total never goes past it', async () => {
    const wire: WireServer = await startOpenAiServer([
      { plan: FLAWED_PLAN, inputTokens: 6000, outputTokens: 2500 },
    ]);
    servers.push(wire);
    const provider = new OpenAiProvider({ model: 'scripted', baseUrl: `${wire.url}/v1`, apiKey: 'sk-local' });
    const budget = 20_000;
    const result = await planFromGoal({ goal: GOAL, provider, tokenBudget: budget, checkShell: false });
    expect(result.outcome).toBe('token-budget');
    expect(result.inputTokens + result.outputTokens).toBeLessThanOrEqual(budget);
    // Every round asked for no more output than the budget had left after its input.
    for (const request of wire.requests) expect(request.max_tokens as number).toBeLessThanOrEqual(budget);
  });

  it('asks nothing when even the first round would not fit', async () => {
    const wire = await startOpenAiServer([{ plan: FLAWED_PLAN }]);
    servers.push(wire);
    const provider = new OpenAiProvider({ model: 'scripted', baseUrl: `${wire.url}/v1`, apiKey: 'sk-local' });
    const result = await planFromGoal({ goal: GOAL, provider, tokenBudget: 2000, checkShell: false });
    expect(result.outcome).toBe('token-budget');
    expect(wire.requests).toHaveLength(0);
  });
});
