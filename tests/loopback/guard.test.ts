/**
 * The loopback guard: which Host and Origin spellings name a server on 127.0.0.1:PORT (only the
 * canonical ones, in any ASCII case) and that a refused request reaches no handler, on a real
 * server, including one plangate did not write.
 */
import { createServer, request, type Server } from 'node:http';
import { connect, createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { guardLoopback, loopbackNames, loopbackRefusal } from '../../lib/loopback/guard.ts';

const PORT = 43123;
const names = loopbackNames('127.0.0.1', PORT);
const OWN_HOSTS = [`127.0.0.1:${PORT}`, `localhost:${PORT}`];

/** The same text with each ASCII letter in a random case. */
const anyCase = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((upper) => [...text].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join(''));

/** Spellings that resolve to, or look like, this server but are not its name. */
const foreignHost = fc.oneof(
  fc.constantFrom(
    `localhost.:${PORT}`,
    `127.0.0.1.:${PORT}`,
    `127.0.0.1.evil.example:${PORT}`,
    `localhost.evil.example:${PORT}`,
    `evil.example:${PORT}`,
    `2130706433:${PORT}`,
    `0x7f000001:${PORT}`,
    `0177.0.0.1:${PORT}`,
    `127.1:${PORT}`,
    `127.0.0.2:${PORT}`,
    `[::1]:${PORT}`,
    `[::ffff:127.0.0.1]:${PORT}`,
    `user@127.0.0.1:${PORT}`,
    `127.0.0.1:${PORT}@evil.example`,
    `127.0.0.1:0${PORT}`,
    `127.0.0.1:${PORT}.`,
    `127.0.0.1 :${PORT}`,
    `127.0.0.1:${PORT},evil.example`,
    '127.0.0.1',
    'localhost',
    `127.0.0.1:${PORT + 1}`,
    '',
  ),
  // Another port of our own names.
  fc
    .tuple(fc.constantFrom('127.0.0.1', 'localhost'), fc.integer({ min: 0, max: 65_535 }))
    .filter(([, port]) => port !== PORT)
    .map(([name, port]) => `${name}:${port}`),
  // Any name around our own: a prefix, a suffix (userinfo, a trailing dot, a subdomain).
  fc
    .tuple(fc.string({ maxLength: 12 }), fc.constantFrom(...OWN_HOSTS), fc.string({ maxLength: 12 }))
    .filter(([before, , after]) => before + after !== '')
    .map(([before, own, after]) => `${before}${own}${after}`),
);

describe('loopbackRefusal', () => {
  it("accepts this server's own Host in any ASCII case, with or without its own Origin", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...OWN_HOSTS).chain(anyCase),
        fc.option(
          fc.constantFrom(...OWN_HOSTS).chain((own) => anyCase(`http://${own}`)),
          { nil: undefined },
        ),
        (host, origin) => {
          expect(loopbackRefusal(host, origin, names)).toBeUndefined();
        },
      ),
    );
  });

  it('refuses every other spelling of Host, and a request without one, naming what it answers to', () => {
    fc.assert(
      fc.property(
        foreignHost,
        fc.option(fc.constantFrom(`http://127.0.0.1:${PORT}`), { nil: undefined }),
        (host, origin) => {
          const refusal = loopbackRefusal(host, origin, names);
          expect(refusal).toContain(`Host ${JSON.stringify(host)} is not this server's address`);
          expect(refusal).toContain(`127.0.0.1:${PORT}, localhost:${PORT}`);
        },
      ),
    );
    expect(loopbackRefusal(undefined, undefined, names)).toMatch(/^a request without a Host header is not/);
  });

  it('refuses a foreign Origin with the right Host: another site, `null`, another port, https, a path', () => {
    const foreignOrigin = fc.oneof(
      fc.constantFrom(
        'null',
        `http://evil.example:${PORT}`,
        `https://127.0.0.1:${PORT}`,
        `http://127.0.0.1:${PORT}/`,
        `http://127.0.0.1:${PORT + 1}`,
        `http://[::1]:${PORT}`,
        `http://2130706433:${PORT}`,
        `http://localhost.:${PORT}`,
        'file://',
        '',
      ),
      foreignHost.map((host) => `http://${host}`),
    );
    fc.assert(
      fc.property(fc.constantFrom(...OWN_HOSTS), foreignOrigin, (host, origin) => {
        expect(loopbackRefusal(host, origin, names)).toContain(
          `Origin ${JSON.stringify(origin)} is not this server's own`,
        );
      }),
    );
  });

  it('lets a server allow further origins (the hosted UI: the approval page, on another port)', () => {
    const page = `http://127.0.0.1:${PORT + 1}`;
    const allowOrigin = (origin: string) => origin === page;
    expect(loopbackRefusal(OWN_HOSTS[0], page, names, allowOrigin)).toBeUndefined();
    expect(loopbackRefusal(OWN_HOSTS[0], 'http://evil.example', names, allowOrigin)).toBeDefined();
    // Allowing an origin never lets a foreign Host in.
    expect(loopbackRefusal(`evil.example:${PORT}`, page, names, allowOrigin)).toBeDefined();
  });

  it('quotes what it refuses JSON-escaped and cut short', () => {
    const refusal = loopbackRefusal(`${'a'.repeat(500)}"\u202e`, undefined, names) as string;
    expect(refusal.length).toBeLessThan(400);
    expect(refusal).not.toContain('"\u202e');
  });
});

describe('loopbackNames', () => {
  it('names an IPv6 loopback address in brackets, every loopback name for a wildcard, and port 80 without a port', () => {
    expect([...loopbackNames('::1', 9000).hosts]).toEqual(['[::1]:9000', 'localhost:9000']);
    expect([...loopbackNames('0.0.0.0', 9000).origins]).toEqual([
      'http://127.0.0.1:9000',
      'http://[::1]:9000',
      'http://localhost:9000',
    ]);
    expect(loopbackNames('127.0.0.1', 80).hosts).toEqual(
      new Set(['127.0.0.1:80', '127.0.0.1', 'localhost:80', 'localhost']),
    );
  });
});

describe('a host prefix (the engine: StartSyncExecution goes to `sync-<host>`)', () => {
  const engine = loopbackNames('127.0.0.1', PORT, 'sync-');

  it('accepts the prefixed own names and nothing else prefixed', () => {
    for (const host of [`sync-127.0.0.1:${PORT}`, `SYNC-localhost:${PORT}`, ...OWN_HOSTS])
      expect(loopbackRefusal(host, undefined, engine)).toBeUndefined();
    fc.assert(
      fc.property(foreignHost, (host) => {
        expect(loopbackRefusal(`sync-${host}`, undefined, engine)).toBeDefined();
      }),
    );
    expect(loopbackRefusal(`sync-127.0.0.1:${PORT}`, undefined, names)).toBeDefined();
  });
});

describe('guardLoopback on a listening server', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  async function serve(): Promise<{ port: number; handled: string[] }> {
    const handled: string[] = [];
    // Two listeners, as a server of someone else's (dynalite's) may have: neither runs for a refusal.
    server = createServer((req, res) => {
      handled.push(req.headers.host ?? '');
      res.end('answered');
    });
    server.on('request', () => handled.push('second listener'));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    guardLoopback(server);
    return { port: (server.address() as AddressInfo).port, handled };
  }

  const call = (port: number, headers: Record<string, string>) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end('x=1');
    });

  it('answers its own Host through every listener, and refuses a foreign one with 403 before any', async () => {
    const { port, handled } = await serve();
    expect(await call(port, { host: `localhost:${port}` })).toEqual({ status: 200, text: 'answered' });
    expect(handled).toEqual([`localhost:${port}`, 'second listener']);
    const refused = await call(port, { host: `evil.example:${port}`, origin: `http://evil.example:${port}` });
    expect(refused.status).toBe(403);
    expect(refused.text).toMatch(/^Forbidden: Host "evil\.example:\d+" is not this server's address/);
    const nullOrigin = await call(port, { host: `127.0.0.1:${port}`, origin: 'null' });
    expect(nullOrigin.status).toBe(403);
    expect(handled).toHaveLength(2);
  });
});

describe('guardLoopback on an HTTP/2 server (h2c, as the Bedrock client speaks)', () => {
  it('reads the name from :authority', async () => {
    const server = createHttp2Server((_req, res) => res.end('answered'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    guardLoopback(server as unknown as Server);
    const port = (server.address() as AddressInfo).port;
    const session = connect(`http://127.0.0.1:${port}`);
    const statusFor = (authority: string) =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':path': '/', ':authority': authority });
        stream.on('response', (headers) => resolve(Number(headers[':status'])));
        stream.on('error', reject);
        stream.resume();
        stream.end();
      });
    try {
      expect(await statusFor(`127.0.0.1:${port}`)).toBe(200);
      expect(await statusFor(`evil.example:${port}`)).toBe(403);
    } finally {
      session.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
