/**
 * The only way out of a sandbox that has a network: an HTTP proxy the harness runs, outside the
 * sandbox, for one plan process. It takes `CONNECT host:port` (https and anything tunnelled) and
 * absolute-URI `http://` requests, canonicalises the host the client asked for (lib/plan/network.ts),
 * lets through only the step's declared hosts, and connects only to an address it checked itself
 * (never this machine or its networks: loopback, private, link-local; the name resolved once, so
 * a name that rebinds between check and connect reaches nothing else). Every request is recorded,
 * refused or not, for the step's evidence.
 *
 * What it cannot see: inside a CONNECT tunnel (TLS), the server name the client sends is its own
 * business; the tunnel still reaches only the declared host's address.
 */
import { lookup } from 'node:dns/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import {
  canonicalHost,
  type HostRule,
  hostRules,
  ipLiteral,
  isDeclared,
  reservedRange,
} from '../../plan/network.ts';
import type { NetworkAccess } from '../../plan/schema.ts';
import type { NetworkRecord } from './plan-process-call.ts';

/** The address to connect to, why none may be (`refused`), or why none was found (`failed`: the host was allowed). */
export type Reachable =
  | { readonly address: string }
  | { readonly refused: string }
  | { readonly failed: string };

/** How the proxy turns a host into the address it connects to (the default: DNS, public addresses only). */
export type Resolver = (host: string) => Promise<Reachable>;

/** At most this many records per process: a plan that loops on refused requests does not fill the journal. */
const MAX_RECORDS = 50;

export interface NetworkProxyOptions {
  readonly access: NetworkAccess;
  /** Only tests pass another (a test host name mapped to a local server); the default is {@link publicAddressOf}. */
  readonly resolve?: Resolver;
}

export interface NetworkProxy {
  /** What was asked of it so far, in order. */
  readonly records: readonly NetworkRecord[];
  /** Stops taking requests and ends every open tunnel. */
  close(): Promise<void>;
}

/**
 * The address a host name (or IP literal) resolves to, refused when any address it has is this
 * machine's or a private network's: one such answer is enough to make the name unsafe.
 */
export async function publicAddressOf(host: string): Promise<Reachable> {
  const literal = ipLiteral(host);
  const addresses = literal
    ? [literal]
    : await lookup(host, { all: true, verbatim: true }).then(
        (found) => found.map((a) => a.address),
        (error: NodeJS.ErrnoException) => error.code ?? 'unresolvable',
      );
  if (typeof addresses === 'string') return { failed: `could not resolve ${host} (${addresses})` };
  for (const address of addresses) {
    const range = reservedRange(address);
    if (range !== undefined) return { refused: `${host} is ${address}, a ${range} address` };
  }
  const [first] = addresses;
  return first === undefined ? { failed: `${host} has no address` } : { address: first };
}

/** Starts the proxy, listening on a unix socket at `socketPath` (bound into the sandbox). */
export async function startNetworkProxy(
  socketPath: string,
  options: NetworkProxyOptions,
): Promise<NetworkProxy> {
  const rules = hostRules(options.access);
  const resolve = options.resolve ?? publicAddressOf;
  const records: NetworkRecord[] = [];
  const record = (entry: NetworkRecord): void => {
    if (records.length < MAX_RECORDS) records.push(entry);
  };
  const sockets = new Set<Socket>();
  const server = createServer();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const asked = `CONNECT ${req.url ?? ''}`;
    void (async () => {
      const target = await allowedTarget(authorityOf(req.url ?? ''), rules, resolve);
      if ('refused' in target) {
        record({ request: asked, allowed: false, detail: target.refused });
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\nplangate: ${target.refused}\n`);
        return;
      }
      if ('failed' in target) {
        record({ request: asked, allowed: true, detail: target.failed });
        client.end(
          `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\nplangate: ${target.failed}\n`,
        );
        return;
      }
      const upstream = connect({ host: target.address, port: target.port });
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        record({ request: asked, allowed: true, detail: `connected to ${target.address}` });
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        if (connected) return client.destroy();
        record({
          request: asked,
          allowed: true,
          detail: `could not connect to ${target.address} (${error.code})`,
        });
        client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      });
      client.on('error', () => upstream.destroy());
    })();
  });
  server.on('request', (req, res) => {
    const asked = `${req.method ?? 'GET'} ${req.url ?? ''}`;
    const answer = (status: number, detail: string, allowed = false): void => {
      record({ request: asked, allowed, detail });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`plangate: ${detail}\n`);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return answer(400, 'not a proxy request (an absolute http:// URL, or CONNECT host:port)');
    }
    if (url.protocol !== 'http:')
      return answer(400, `${url.protocol} is not proxied: use https through CONNECT`);
    void (async () => {
      const target = await allowedTarget(
        { host: url.hostname, port: url.port === '' ? 80 : Number(url.port) },
        rules,
        resolve,
      );
      if ('refused' in target) return answer(403, target.refused);
      if ('failed' in target) return answer(502, target.failed, true);
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !name.startsWith('proxy-')),
      );
      // The Host header names the host that was checked, never another on the same address.
      const upstream = httpRequest({
        host: target.address,
        port: target.port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: { ...headers, host: target.port === 80 ? target.host : `${target.host}:${target.port}` },
      });
      upstream.on('response', (answer) => {
        record({ request: asked, allowed: true, detail: `${answer.statusCode} from ${target.address}` });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        record({
          request: asked,
          allowed: true,
          detail: `could not connect to ${target.address} (${error.code})`,
        });
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      req.pipe(upstream);
    })();
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(socketPath, () => done());
  });
  return {
    records,
    close: () => closeServer(server, sockets),
  };
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((done) => server.close(() => done()));
}

/** `host:port` of a CONNECT (the port required; IPv6 in brackets), or undefined. */
function authorityOf(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]*):(\d{1,5})$/.exec(authority);
  return match?.[1] !== undefined && match[2] !== undefined
    ? { host: match[1], port: Number(match[2]) }
    : undefined;
}

/** Where a request may go: its canonical host declared, its address checked; else why not. */
async function allowedTarget(
  asked: { host: string; port: number } | undefined,
  rules: readonly HostRule[],
  resolve: Resolver,
): Promise<{ host: string; address: string; port: number } | { refused: string } | { failed: string }> {
  if (asked === undefined || asked.port < 1 || asked.port > 65_535) return { refused: 'not a host and port' };
  const host = canonicalHost(asked.host);
  if (host === undefined) return { refused: `${JSON.stringify(asked.host)} is not a host` };
  if (!isDeclared(rules, host, asked.port))
    return { refused: `${host}:${asked.port} is not a host the step declared` };
  const reachable = await resolve(host);
  return 'address' in reachable ? { host, address: reachable.address, port: asked.port } : reachable;
}
