/**
 * The harness's network proxy (lib/runtime/sandbox/network-proxy.ts) with a real server: a declared
 * host is reached by CONNECT and by an absolute-URI request, whatever its spelling; an undeclared
 * one, and an address of this machine, are refused and recorded. Then a sandboxed process: only the
 * proxy's forwarder is on its loopback, and raw TCP has no route.
 */

import { mkdtemp } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicAddressOf, startNetworkProxy } from '../../lib/runtime/sandbox/network-proxy.ts';
import { sandboxStatus, withSandboxScope } from '../../lib/runtime/sandbox/sandbox.ts';
import { runProcess } from '../../lib/runtime/shared/process.ts';

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => res.end(`hello ${req.headers.host} ${req.url}`));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** `allowed.test` is the local server; every other name is not resolvable. */
const testResolver = async (host: string) =>
  host === 'allowed.test' ? { address: '127.0.0.1' } : { failed: `${host} unknown to the test` };

async function proxyOn(hosts: string[]) {
  const socket = join(await mkdtemp(join(tmpdir(), 'proxy-test-')), 'proxy.sock');
  const proxy = await startNetworkProxy(socket, { access: { hosts }, resolve: testResolver });
  return { socket, proxy };
}

/** An absolute-URI request through the proxy: status and body. */
function viaProxy(socket: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request(
      { socketPath: socket, path: url, method: 'GET', headers: { host: 'ignored' } },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', fail);
    req.end();
  });
}

/** A CONNECT through the proxy, then a plain HTTP request in the tunnel: the proxy's first line, and what came back. */
function tunnel(socket: string, authority: string): Promise<string> {
  return new Promise((done, fail) => {
    const client = connect(socket);
    let text = '';
    let sent = false;
    client.on('data', (chunk) => {
      text += chunk.toString();
      if (!sent && text.startsWith('HTTP/1.1 200') && text.includes('\r\n\r\n')) {
        sent = true;
        client.write('GET /tunnelled HTTP/1.1\r\nhost: allowed.test\r\nconnection: close\r\n\r\n');
      }
    });
    client.on('end', () => done(text));
    client.on('error', fail);
    client.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`);
  });
}

describe('the network proxy', () => {
  it('reaches a declared host, however the client spells it, and records it', async () => {
    const { socket, proxy } = await proxyOn([`allowed.test:${port}`]);
    try {
      // Full-width and ideographic dots as a client sends them on the wire: percent-encoded UTF-8.
      for (const spelled of [
        'allowed.test',
        'ALLOWED.Test.',
        'allowed%2Etest',
        'allowed%EF%BC%8Etest',
        'allowed%E3%80%82test',
      ]) {
        const answer = await viaProxy(socket, `http://${spelled}:${port}/x?y=1`);
        expect(answer, spelled).toEqual({ status: 200, body: `hello allowed.test:${port} /x?y=1` });
      }
      expect(await tunnel(socket, `allowed.test:${port}`)).toMatch(/hello allowed\.test \/tunnelled/);
      expect(proxy.records.every((r) => r.allowed)).toBe(true);
      expect(proxy.records.at(-1)?.request).toBe(`CONNECT allowed.test:${port}`);
    } finally {
      await proxy.close();
    }
  });

  it('refuses an undeclared host, port or scheme, and records each', async () => {
    const { socket, proxy } = await proxyOn([`allowed.test:${port}`]);
    try {
      expect((await viaProxy(socket, `http://other.test:${port}/`)).status).toBe(403);
      expect((await viaProxy(socket, `http://allowed.test:${port + 1}/`)).status).toBe(403);
      expect((await viaProxy(socket, `http://allowed.test.other.test:${port}/`)).status).toBe(403);
      expect((await viaProxy(socket, `http://127.0.0.1:${port}/`)).status).toBe(403);
      expect((await viaProxy(socket, 'ftp://allowed.test/')).status).toBe(400);
      expect(await tunnel(socket, `other.test:${port}`)).toMatch(/^HTTP\/1\.1 403/);
      expect(await tunnel(socket, `allowed.test@other.test:${port}`)).toMatch(/^HTTP\/1\.1 403/);
      expect(proxy.records).toHaveLength(7);
      expect(proxy.records.every((r) => !r.allowed)).toBe(true);
      expect(proxy.records[0]?.detail).toBe(`other.test:${port} is not a host the step declared`);
    } finally {
      await proxy.close();
    }
  });

  it('never connects to this machine or its networks, by name or by literal (the default resolver)', async () => {
    for (const host of [
      'localhost',
      '127.0.0.1',
      '10.0.0.1',
      '169.254.169.254',
      '[::1]',
      '[::ffff:127.0.0.1]',
    ])
      expect(await publicAddressOf(host), host).toHaveProperty('refused');
    expect(await publicAddressOf('1.1.1.1')).toEqual({ address: '1.1.1.1' });
  });
});

describe.runIf(sandboxStatus().kind === 'bwrap')('a sandboxed process that declares hosts', () => {
  it('gets the proxy and nothing else: the harness refuses the rest and records it', async () => {
    const result = await withSandboxScope({ network: { hosts: ['allowed.test'] } }, () =>
      runProcess({
        command: [
          'echo "proxy=$HTTPS_PROXY no_proxy=[$NO_PROXY]"',
          'curl -sS -o /dev/null -w "declared:%{http_code}\\n" http://allowed.test/ || true',
          'curl -sS -o /dev/null -w "undeclared:%{http_code}\\n" https://evil.example/ 2>&1 | tail -1',
          `curl -sS --noproxy '*' -m 2 http://127.0.0.1:${port}/ >/dev/null 2>&1 && echo direct:reached || echo direct:refused`,
          `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo tcp:reached || echo tcp:refused`,
        ].join('\n'),
        cwd: tmpdir(),
        timeoutMs: 20_000,
      }),
    );
    expect(result.stdout).toContain('proxy=http://127.0.0.1:3128 no_proxy=[]');
    expect(result.stdout).toContain('direct:refused');
    expect(result.stdout).toContain('tcp:refused');
    expect(result.stdout).toMatch(/declared:502/);
    expect(result.network).toEqual([
      {
        request: 'GET http://allowed.test/',
        allowed: true,
        detail: expect.stringMatching(/could not resolve allowed\.test/),
      },
      {
        request: 'CONNECT evil.example:443',
        allowed: false,
        detail: 'evil.example:443 is not a host the step declared',
      },
    ]);
  });
});
