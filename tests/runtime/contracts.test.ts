// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContractSchema } from '../../lib/plan/schema.ts';
import { checkContract, contractFailure } from '../../lib/runtime/contracts/contracts.ts';
import { classifyFailure } from '../../lib/runtime/recovery/classify.ts';
import { SecretSource } from '../../lib/runtime/secrets/secrets.ts';

const scope = { output: { count: 3 }, context: { min: 2 }, steps: { a: { n: 1 } } };
let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(req.url === '/health' ? 200 : 500);
    res.end(req.url === '/health' ? `ok auth=${req.headers.authorization ?? ''}` : 'boom');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const contract = (c: unknown) => ContractSchema.parse(c);

describe('checkContract', () => {
  it('passes a command on exit code and stdout, with evidence', async () => {
    const ev = await checkContract(
      contract({ kind: 'command', command: 'echo ready', stdoutMatches: '^ready' }),
      scope,
    );
    expect(ev).toMatchObject({
      kind: 'command',
      ran: 'echo ready',
      exitCode: 0,
      passed: true,
      excerpt: 'ready\n',
    });
    expect(ev.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('fails a command on the wrong exit code or stdout, saying why; the failure is logic', async () => {
    const ev = await checkContract(contract({ kind: 'command', command: 'echo nope >&2; exit 2' }), scope);
    expect(ev).toMatchObject({ passed: false, exitCode: 2, reason: 'exit code 2, expected 0: nope' });
    expect(classifyFailure(contractFailure(ev)).failureClass).toBe('logic');
    const out = await checkContract(
      contract({ kind: 'command', command: 'echo later', stdoutMatches: 'ready' }),
      scope,
    );
    expect(out).toMatchObject({ passed: false, reason: 'stdout does not match /ready/' });
  });

  it('times out a command and reports it as transient', async () => {
    const ev = await checkContract(
      contract({ kind: 'command', command: 'sleep 20', timeoutSeconds: 1 }),
      scope,
    );
    expect(ev).toMatchObject({ passed: false, timedOut: true });
    expect(classifyFailure(contractFailure(ev)).failureClass).toBe('transient');
  });

  it('checks http status and body; secrets in headers are resolved but never shown', async () => {
    const secrets = new SecretSource({
      secrets: [{ name: 'tok', source: 'env', ref: 'TOK' }],
      env: { TOK: 'sekrit-value' },
    });
    const ev = await checkContract(
      contract({
        kind: 'http',
        url: `${base}/health`,
        headers: { authorization: '${secrets.tok}' },
        bodyMatches: 'ok auth=sekrit',
      }),
      scope,
      { secrets },
    );
    expect(ev).toMatchObject({ passed: true, status: 200 });
    expect(JSON.stringify(ev)).not.toContain('sekrit-value');
    const bad = await checkContract(contract({ kind: 'http', url: `${base}/other` }), scope);
    expect(bad).toMatchObject({ passed: false, status: 500, reason: 'status 500, expected 200' });
  });

  it('evaluates JSONata assertions over output, context and steps', async () => {
    expect(
      await checkContract(
        contract({ kind: 'assert', expression: 'output.count >= context.min and steps.a.n = 1' }),
        scope,
      ),
    ).toMatchObject({ passed: true });
    expect(
      await checkContract(contract({ kind: 'assert', expression: 'output.count > 5' }), scope),
    ).toMatchObject({
      passed: false,
      reason: 'expression evaluated to false, not true',
    });
    expect(await checkContract(contract({ kind: 'assert', expression: 'output.(' }), scope)).toMatchObject({
      passed: false,
      error: { name: 'Error' },
    });
  });

  it('reports a lambda contract without a client as not passing, never as passed', async () => {
    const ev = await checkContract(contract({ kind: 'lambda', functionName: 'checker' }), scope);
    expect(ev).toMatchObject({ passed: false, error: { name: 'NotConfigured' } });
  });
});
