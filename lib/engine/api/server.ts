import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardLoopback } from '../../loopback/guard.ts';
import type { StepFunctionsEngine } from '../types.ts';
import { type ApiReply, dispatch, errorReply } from './dispatch.ts';

/** Largest request body accepted: a 1 MiB definition, JSON-escaped inside the request, with room to spare. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

export interface EngineServerProps {
  readonly engine: StepFunctionsEngine;
  /** @default 0 (an ephemeral port) */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
}

export interface EngineServer {
  /**
   * The endpoint for @aws-sdk/client-sfn or `aws --endpoint-url`, e.g. `http://127.0.0.1:41234`.
   * StartSyncExecution is modeled with the host prefix `sync-`, which a loopback address cannot
   * take: give the SDK client `disableHostPrefix: true` (boto3: `Config(inject_host_prefix=False)`).
   */
  readonly url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, reply: ApiReply): void {
  const body = JSON.stringify(reply.body);
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/x-amz-json-1.0',
    'Content-Length': Buffer.byteLength(body),
    'x-amzn-RequestId': randomUUID(),
  };
  if (typeof reply.body.__type === 'string') headers['x-amzn-ErrorType'] = reply.body.__type;
  res.writeHead(reply.status, headers);
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        resolve(undefined);
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(engine: StepFunctionsEngine, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST') {
    send(
      res,
      errorReply(
        'UnknownOperationException',
        `The Step Functions API takes POST requests, not ${req.method ?? ''}`,
        404,
      ),
    );
    req.resume();
    return;
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_REQUEST_BYTES) {
    send(
      res,
      errorReply('ValidationException', `The request body is larger than ${MAX_REQUEST_BYTES} bytes`, 413),
    );
    req.resume();
    return;
  }
  const text = await readBody(req);
  if (text === undefined) {
    send(
      res,
      errorReply('ValidationException', `The request body is larger than ${MAX_REQUEST_BYTES} bytes`, 413),
    );
    return;
  }
  const target = req.headers['x-amz-target'];
  // a caller that hangs up before its answer (a worker giving up its long poll) is told nothing more
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  send(res, await dispatch(engine, Array.isArray(target) ? target[0] : target, text, gone.signal));
}

/** Serves the Step Functions API (AWS JSON 1.0) over `engine` on loopback. */
export async function startEngineServer(props: EngineServerProps): Promise<EngineServer> {
  const server = createServer((req, res) => {
    handle(props.engine, req, res).catch(() => {
      if (!res.headersSent)
        send(res, errorReply('InternalFailure', 'The engine failed to process the request', 500));
      else res.destroy();
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  const host = props.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(props.port ?? 0, host, () => {
      server.off('error', reject);
      // Before the first connection is read: a request naming another host reaches no operation.
      guardLoopback(server, {
        // StartSyncExecution's modeled host prefix, for a client that maps it to loopback
        hostPrefix: 'sync-',
        refuse: (res, message) => send(res, errorReply('AccessDeniedException', message, 403)),
      });
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
