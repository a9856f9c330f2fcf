/**
 * A local API Gateway (HTTP API, payload format 2.0) in front of the same Lambda handlers the
 * CDK stack deploys: routes from lib/runtime/api/routes.ts, the AWS_IAM authorizer (SigV4, with
 * the SDK's own signer) and the JWT authorizer on the routes that have them, and the event shape
 * API Gateway builds, so a handler cannot tell it from AWS.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { HttpEvent, HttpResult } from '../../runtime/api/http.ts';
import { GATEWAY_MAX_BODY_BYTES } from '../../runtime/api/http.ts';
import { type ApiRoute, matchRoute } from '../../runtime/api/routes.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import type { JwtVerifier } from './jwt.ts';
import type { SigV4Verifier } from './sigv4.ts';

export type RouteHandler = (event: HttpEvent) => Promise<HttpResult>;

export interface LocalApiGatewayProps {
  readonly handlers: Readonly<Record<ApiRoute['handler'], RouteHandler>>;
  /** Checks `iam` routes; without it they answer 403, as an API without credentials would. */
  readonly sigv4?: SigV4Verifier;
  /** Checks `jwt` routes; without it they answer 401. */
  readonly jwt?: JwtVerifier;
  /**
   * `none`: iam and jwt routes pass unchecked, for handlers that trust an identity header from
   * loopback (`plangate serve --identity header`). @default 'check'
   */
  readonly authorizers?: 'check' | 'none';
  /** @default 0 (any free port) */
  readonly port?: number;
  /**
   * Told of each request refused before its handler ran (by the loopback guard, or an
   * authorizer), as API Gateway's access log would be: the handler never sees it.
   */
  readonly onRefused?: (refused: RefusedRequest) => Promise<void>;
  /**
   * Why the platform cannot take new work now (its store cannot be written), if it cannot: asked
   * before every request that is not a read, and after any request whose handler failed (then
   * with `afterFailure`, so the cause can be looked for). A reason is answered 503 with it and
   * `Retry-After`. @default - always available
   */
  readonly unavailable?: (afterFailure: boolean) => string | undefined;
  /**
   * How many requests are handled at once, and how many more wait their turn (in arrival order);
   * a request beyond both is answered 503 with `Retry-After` at once, before its body is read.
   * @default DEFAULT_ADMISSION
   */
  readonly admission?: AdmissionLimits;
}

/** The bounds of a gateway's admission control (docs/api.md, "Capacity"). */
export interface AdmissionLimits {
  /** Requests handled at once: a positive integer. */
  readonly maxInFlight: number;
  /** Requests waiting for one of those places: an integer >= 0. */
  readonly maxQueued: number;
}

/**
 * Sized for two cores: beyond a few dozen submissions at once a request only waits longer (they
 * share one event loop, the engine and DynamoDB), and a few hundred waiting covers a burst.
 */
export const DEFAULT_ADMISSION: AdmissionLimits = { maxInFlight: 32, maxQueued: 512 };

/** Seconds a client refused for capacity is told to wait: places free within milliseconds. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/** The problem with `limits`, naming the option, or undefined when they are valid. */
export function admissionProblem(limits: AdmissionLimits): string | undefined {
  if (!Number.isInteger(limits.maxInFlight) || limits.maxInFlight < 1)
    return `maxInFlight must be a positive integer, not ${limits.maxInFlight}`;
  if (!Number.isInteger(limits.maxQueued) || limits.maxQueued < 0)
    return `maxQueued must be an integer >= 0, not ${limits.maxQueued}`;
  return undefined;
}

/**
 * A bounded number of requests under way and a bounded queue behind them. A place is held until
 * the response is closed (sent, or its client gone); a waiting request whose client goes leaves
 * the queue.
 */
class Admission {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limits: AdmissionLimits) {}

  get load(): GatewayLoad {
    return { inFlight: this.inFlight, queued: this.waiting.length };
  }

  /** Runs `handle` now or once a place frees; false (and nothing runs) when the queue is full too. */
  admit(res: ServerResponse, handle: () => void): boolean {
    if (this.inFlight < this.limits.maxInFlight) {
      this.start(res, handle);
      return true;
    }
    if (this.waiting.length >= this.limits.maxQueued) return false;
    const turn = () => this.start(res, handle);
    this.waiting.push(turn);
    res.once('close', () => {
      const at = this.waiting.indexOf(turn);
      if (at >= 0) this.waiting.splice(at, 1);
    });
    return true;
  }

  private start(res: ServerResponse, handle: () => void): void {
    this.inFlight++;
    res.once('close', () => {
      this.inFlight--;
      this.waiting.shift()?.();
    });
    handle();
  }
}

/** Requests being handled and waiting, now. */
export interface GatewayLoad {
  readonly inFlight: number;
  readonly queued: number;
}

/** Seconds a client is asked to wait after a 503 for a store that cannot be written. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The 503 of a platform that cannot take new work now, with its cause and when to try again. */
function unavailableResult(reason: string, retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS): HttpResult {
  return {
    statusCode: 503,
    headers: { 'retry-after': String(retryAfterSeconds) },
    body: JSON.stringify({ message: reason }),
  };
}

/** A request the gateway refused before any handler ran. */
export interface RefusedRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly message: string;
  /** Where it came from: its source address and user agent, as the request gives them. */
  readonly source: string;
}

/** How long a client refused while the gateway stops is told to wait before it tries again. */
export const STOPPING_RETRY_AFTER_SECONDS = 5;

export class LocalApiGateway {
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** e.g. `http://127.0.0.1:43210` */
    readonly url: string,
    private readonly lifecycle: { stopping: boolean },
    private readonly admission: Admission,
  ) {}

  /** Requests being handled and waiting their turn, now. */
  get load(): GatewayLoad {
    return this.admission.load;
  }

  static async start(props: LocalApiGatewayProps): Promise<LocalApiGateway> {
    const limits = props.admission ?? DEFAULT_ADMISSION;
    const problem = admissionProblem(limits);
    if (problem) throw new Error(`LocalApiGateway admission: ${problem}`);
    const admission = new Admission(limits);
    const lifecycle = { stopping: false };
    const server = createServer((req, res) => {
      if (lifecycle.stopping) {
        // A request on a kept-alive connection after the stop began: refused, never half done.
        req.resume();
        res.shouldKeepAlive = false;
        return send(
          res,
          unavailableResult('The server is stopping: retry once it is back', STOPPING_RETRY_AFTER_SECONDS),
        );
      }
      const admitted = admission.admit(res, () => handle(req, res));
      if (!admitted) {
        // Past capacity: told at once, on a connection that stays usable, rather than reset or left hanging.
        req.resume();
        send(
          res,
          unavailableResult(
            `The server is at capacity (${limits.maxInFlight} requests under way, ${limits.maxQueued} waiting): retry after ${BUSY_RETRY_AFTER_SECONDS} s`,
            BUSY_RETRY_AFTER_SECONDS,
          ),
        );
      }
    });
    const handle = (req: IncomingMessage, res: ServerResponse): void => {
      serve(req, res, props).catch((error: unknown) => {
        // A handler that throws is API Gateway's 500 with a generic body: nothing internal leaks.
        process.stderr.write(`api: ${req.method} ${req.url?.split('?')[0]}: ${(error as Error).message}\n`);
        const reason = props.unavailable?.(true);
        if (!res.headersSent)
          send(
            res,
            reason
              ? unavailableResult(reason)
              : { statusCode: 500, body: JSON.stringify({ message: 'Internal Server Error' }) },
          );
        else res.end();
      });
    };
    const url = await listenOnLoopback(server, props.port, {
      refuse: (res, message) => send(res, { statusCode: 403, body: JSON.stringify({ message }) }),
      onRefused: (req, message) => reportRefused(props, req, 403, message),
    });
    return new LocalApiGateway(server, url, lifecycle, admission);
  }

  /** Stops accepting (requests still arriving are answered 503 with Retry-After) and waits for those under way. */
  async close(): Promise<void> {
    this.lifecycle.stopping = true;
    await closeServer(this.server);
  }
}

async function serve(req: IncomingMessage, res: ServerResponse, props: LocalApiGatewayProps): Promise<void> {
  const [rawPath = '/', rawQuery = ''] = (req.url ?? '/').split(/\?(.*)/s);
  const method = (req.method ?? 'GET').toUpperCase();
  const matched = matchRoute(method, rawPath);
  if (!matched) return send(res, { statusCode: 404, body: JSON.stringify({ message: 'Not Found' }) });
  const body = await readBody(req);
  if (body === undefined)
    return send(res, { statusCode: 413, body: JSON.stringify({ message: 'Request Entity Too Large' }) });
  const { cookie, ...headers } = headersOf(req);
  const sourceIp = req.socket.remoteAddress ?? '';
  let authorizer: NonNullable<HttpEvent['requestContext']['authorizer']> | undefined;
  if (props.authorizers === 'none') {
    // The handlers decide, from the loopback-only identity header.
  } else if (matched.route.auth === 'iam') {
    const checked = props.sigv4
      ? await props.sigv4.verify({ method, rawPath, rawQuery, headers, body })
      : { ok: false as const, message: 'Missing Authentication Token' };
    if (!checked.ok) {
      reportRefused(props, req, 403, checked.message);
      return send(res, { statusCode: 403, body: JSON.stringify({ message: checked.message }) });
    }
    authorizer = {
      iam: { userArn: checked.principal.arn, callerId: checked.principal.accessKeyId },
    };
  } else if (matched.route.auth === 'jwt') {
    const checked = props.jwt
      ? props.jwt.verify(headers.authorization)
      : { ok: false as const, message: 'Unauthorized' };
    if (!checked.ok) {
      reportRefused(props, req, 401, checked.message);
      return send(res, { statusCode: 401, body: JSON.stringify({ message: checked.message }) });
    }
    authorizer = { jwt: { claims: checked.claims } };
  }
  if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS') {
    const reason = props.unavailable?.(false);
    if (reason) return send(res, unavailableResult(reason));
  }
  const now = new Date();
  const event = {
    version: '2.0',
    routeKey: `${matched.route.method} ${matched.route.path}`,
    rawPath,
    rawQueryString: rawQuery,
    headers,
    // As API Gateway (payload 2.0): the Cookie header's pairs, as a list, outside `headers`.
    cookies: cookie ? cookie.split(/;\s*/).filter(Boolean) : undefined,
    queryStringParameters: rawQuery ? Object.fromEntries(new URLSearchParams(rawQuery)) : undefined,
    pathParameters: matched.params,
    isBase64Encoded: body.length > 0,
    body: body.length > 0 ? body.toString('base64') : undefined,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: headers.host ?? '127.0.0.1',
      domainPrefix: 'local',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp, userAgent: headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey: `${matched.route.method} ${matched.route.path}`,
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
      authorizer,
    },
  } as HttpEvent;
  const result = await props.handlers[matched.route.handler](event);
  const reason = (result.statusCode ?? 200) >= 500 ? props.unavailable?.(true) : undefined;
  send(res, reason ? unavailableResult(reason) : result);
}

/** Lower-case names; repeated headers joined with commas, as API Gateway does. */
function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    Object.defineProperty(headers, name, {
      value: Array.isArray(value) ? value.join(',') : value,
      enumerable: true,
      writable: true,
    });
  }
  return headers;
}

/**
 * The whole body, or undefined past API Gateway's payload quota (under it, the handlers answer a
 * body over their own limit, naming it). An oversized body is still read to its end (up to a hard
 * cap) so the client gets the 413 rather than a reset connection.
 */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > DRAIN_CAP_BYTES) {
      req.destroy();
      return undefined;
    }
    if (size <= GATEWAY_MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  return size > GATEWAY_MAX_BODY_BYTES ? undefined : Buffer.concat(chunks);
}

/** Past this, an oversized upload is cut off instead of drained. */
const DRAIN_CAP_BYTES = 64 * 1024 * 1024;

function send(res: ServerResponse, result: HttpResult): void {
  const headers: Record<string, string | string[]> = { 'content-type': 'application/json' };
  for (const [name, value] of Object.entries(result.headers ?? {}))
    headers[name.toLowerCase()] = String(value);
  // One Set-Cookie header per cookie, as API Gateway sends a result's `cookies`.
  if (result.cookies?.length) headers['set-cookie'] = result.cookies;
  res.writeHead(result.statusCode ?? 200, headers);
  const body = result.body ?? '';
  res.end(result.isBase64Encoded ? Buffer.from(body, 'base64') : body);
}

function reportRefused(
  props: LocalApiGatewayProps,
  req: IncomingMessage,
  status: number,
  message: string,
): void {
  if (!props.onRefused) return;
  const agent = req.headers['user-agent'];
  const refused: RefusedRequest = {
    method: (req.method ?? 'GET').toUpperCase(),
    path: (req.url ?? '/').split('?')[0] ?? '/',
    status,
    message,
    source: `${req.socket.remoteAddress ?? 'unknown address'}${agent ? ` (${agent.slice(0, 100)})` : ''}`,
  };
  props.onRefused(refused).catch((error: unknown) => {
    process.stderr.write(
      `api: recording a refused ${refused.method} ${refused.path}: ${(error as Error).message}\n`,
    );
  });
}
