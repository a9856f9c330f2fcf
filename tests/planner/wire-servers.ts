/**
 * Local HTTP servers that speak the two providers' wire protocols and replay scripted answers, so
 * the planner is tested through the real SDK clients (`openai`, @aws-sdk/client-bedrock-runtime):
 * OpenAI Chat Completions (`POST /v1/chat/completions`) and Bedrock Converse
 * (`POST /model/{modelId}/converse`). Every request body is kept for the test to read.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttp2Server } from 'node:http2';
import { closeServer, listenOnLoopback } from '../../lib/aws-local/listen.ts';

/** One scripted reply: a plan (as structured output or as text), or an HTTP error. */
export type ScriptedReply =
  | { readonly plan: unknown; readonly inputTokens?: number; readonly outputTokens?: number }
  | { readonly text: string }
  | { readonly status: number; readonly error: string };

export interface WireServer {
  readonly url: string;
  /** Parsed JSON bodies of every request, in order. */
  readonly requests: Record<string, unknown>[];
  close(): Promise<void>;
}

async function start(
  route: RegExp,
  reply: (scripted: ScriptedReply, res: ServerResponse, request: Record<string, unknown>) => void,
  script: readonly ScriptedReply[],
  protocol: 'http/1.1' | 'h2c' = 'http/1.1',
): Promise<WireServer> {
  const requests: Record<string, unknown>[] = [];
  let next = 0;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      if (req.method !== 'POST' || !route.test(path)) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no such route"}');
        return;
      }
      const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      requests.push(request);
      // The last reply repeats: a script that never converges stays wrong.
      const scripted = script[Math.min(next++, script.length - 1)] as ScriptedReply;
      if ('status' in scripted) {
        res.writeHead(scripted.status, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: { message: scripted.error, type: 'error' }, message: scripted.error }),
        );
        return;
      }
      reply(scripted, res, request);
    });
  };
  // The Bedrock runtime client speaks HTTP/2 (h2c on a plain http:// endpoint), as it does to AWS.
  const server = (protocol === 'h2c'
    ? createHttp2Server(handle as never)
    : createServer(handle)) as unknown as Server;
  const url = await listenOnLoopback(server);
  return { url, requests, close: () => closeServer(server) };
}

export function startOpenAiServer(script: readonly ScriptedReply[]): Promise<WireServer> {
  return start(
    /^\/v1\/chat\/completions$/,
    (scripted, res) => {
      const content =
        'text' in scripted ? scripted.text : JSON.stringify((scripted as { plan: unknown }).plan);
      const usage: { inputTokens?: number; outputTokens?: number } = 'plan' in scripted ? scripted : {};
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-local',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: 'scripted',
          choices: [
            { index: 0, finish_reason: 'stop', message: { role: 'assistant', content, refusal: null } },
          ],
          usage: {
            prompt_tokens: usage.inputTokens ?? 1000,
            completion_tokens: usage.outputTokens ?? 200,
            total_tokens: (usage.inputTokens ?? 1000) + (usage.outputTokens ?? 200),
          },
        }),
      );
    },
    script,
  );
}

export function startBedrockServer(script: readonly ScriptedReply[]): Promise<WireServer> {
  return start(
    /^\/model\/[^/]+\/converse$/,
    (scripted, res, request) => {
      const content =
        'text' in scripted
          ? [{ text: scripted.text }]
          : [
              {
                toolUse: {
                  toolUseId: 'tooluse-1',
                  // The tool the request chose: submit_plan, or submit_recovery for a suggestion.
                  name: toolChosen(request) ?? 'submit_plan',
                  input: (scripted as { plan: unknown }).plan,
                },
              },
            ];
      const usage: { inputTokens?: number; outputTokens?: number } = 'plan' in scripted ? scripted : {};
      const inputTokens = usage.inputTokens ?? 1000;
      const outputTokens = usage.outputTokens ?? 200;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          output: { message: { role: 'assistant', content } },
          stopReason: 'text' in scripted ? 'end_turn' : 'tool_use',
          usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
          metrics: { latencyMs: 1 },
        }),
      );
    },
    script,
    'h2c',
  );
}

/** The tool a Converse request forces (`toolConfig.toolChoice.tool.name`). */
function toolChosen(request: Record<string, unknown>): string | undefined {
  const choice = (request.toolConfig as { toolChoice?: { tool?: { name?: unknown } } } | undefined)
    ?.toolChoice?.tool?.name;
  return typeof choice === 'string' ? choice : undefined;
}

/** The first answer of a careless model: a cycle, an unknown tool, a step without a contract. */
export const FLAWED_PLAN = {
  id: 'health-check',
  version: 7,
  objective: 'Add a health check endpoint to the service and prove it answers',
  approval: { allowAutoApprove: true },
  steps: [
    {
      id: 'write-handler',
      description: 'Write the health check handler into src/health.js',
      dependsOn: ['register-route'],
      tool: 'shell',
      args: { command: "mkdir -p src && echo 'module.exports = () => 200' > src/health.js" },
      contract: { kind: 'command', command: 'test -f src/health.js' },
    },
    {
      id: 'register-route',
      description: 'Register the /health route in src/routes.txt',
      dependsOn: ['write-handler'],
      tool: 'teleport',
      args: { to: 'src/routes.txt' },
      contract: { kind: 'command', command: 'grep -q /health src/routes.txt' },
    },
    {
      id: 'document',
      description: 'Document the endpoint in docs/health.md',
      dependsOn: ['register-route'],
      tool: 'shell',
      args: { command: 'mkdir -p docs && echo "GET /health" > docs/health.md' },
    },
  ],
};

/** The same plan, fixed. */
export const FIXED_PLAN = {
  ...FLAWED_PLAN,
  steps: [
    { ...FLAWED_PLAN.steps[0], dependsOn: [] },
    {
      ...FLAWED_PLAN.steps[1],
      tool: 'shell',
      args: { command: "echo 'GET /health -> health' >> src/routes.txt" },
    },
    { ...FLAWED_PLAN.steps[2], contract: { kind: 'command', command: 'grep -q /health docs/health.md' } },
  ],
};
