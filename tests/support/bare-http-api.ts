/**
 * An API Gateway HTTP API (payload v2) in front of one Lambda handler, on loopback: each request
 * becomes the event API Gateway would send (raw path, headers, query, body base64-encoded as it
 * encodes form posts) and the handler's structured result becomes the response. No authorizer:
 * for tests of one handler (Slack's interaction route); the local stack's API Gateway with its
 * authorizers is lib/aws-local/api-gateway/.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { closeServer, listenOnLoopback } from '../../lib/aws-local/listen.ts';
import type { HttpEvent, HttpResult } from '../../lib/runtime/api/http.ts';

/** Larger requests are refused before the handler sees them (API Gateway's own limit is 10 MB). */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export class LocalHttpApi {
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** e.g. `http://127.0.0.1:43210` */
    readonly url: string,
  ) {}

  static async start(
    handler: (event: HttpEvent) => Promise<HttpResult>,
    opts: { port?: number } = {},
  ): Promise<LocalHttpApi> {
    const server = createServer((req, res) => {
      void (async () => {
        const body = await readBody(req);
        if (body === undefined) {
          res.writeHead(413).end();
          return;
        }
        const result = await handler(toEvent(req, body)).catch(
          (): HttpResult => ({ statusCode: 500, body: 'internal error' }),
        );
        res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string> | undefined);
        res.end(result.body ?? '');
      })();
    });
    return new LocalHttpApi(server, await listenOnLoopback(server, opts.port));
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}

function toEvent(req: IncomingMessage, body: Buffer): HttpEvent {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  const method = req.method ?? 'GET';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: Object.fromEntries(url.searchParams),
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: `${Date.now()}`,
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body.length > 0
      ? { body: body.toString('base64'), isBase64Encoded: true }
      : { isBase64Encoded: false }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_REQUEST_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
