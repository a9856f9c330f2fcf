/**
 * Who connects (lib/loopback/peer.ts), on a real guarded server: this process and another process
 * of the machine are served; plan code in a bubblewrap sandbox that shares the machine's network
 * (PLANGATE_SANDBOX_NETWORK=host) is refused before any handler runs, on every endpoint the guard
 * fronts (the engine, the local DynamoDB, the event bus, the approvals API).
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { guardLoopback } from '../../lib/loopback/guard.ts';
import { bwrapArgs, sandboxStatus } from '../../lib/runtime/sandbox/sandbox.ts';

let server: Server | undefined;
afterEach(() => server?.close());

async function guarded(): Promise<{ url: string; handled: string[] }> {
  const handled: string[] = [];
  const listening = createServer((req, res) => {
    handled.push(req.url ?? '');
    res.end('served');
  });
  server = listening;
  await new Promise<void>((r) => listening.listen(0, '127.0.0.1', r));
  guardLoopback(listening);
  return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`, handled };
}

/** What a process prints after fetching `url`: `<status> <body>`. */
function fetchFrom(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', () => resolve(out.trim()));
  });
}

const FETCH = (url: string) =>
  `fetch(${JSON.stringify(url)}).then(async (r) => console.log(r.status, await r.text()), (e) => console.log('error', e.message))`;

describe('the loopback guard, by who connects', () => {
  it("serves this process and another process of this machine's", async () => {
    const { url, handled } = await guarded();
    const own = await fetch(`${url}/own`);
    expect(own.status).toBe(200);
    expect(await fetchFrom(process.execPath, ['-e', FETCH(`${url}/other`)])).toBe('200 served');
    expect(handled).toEqual(['/own', '/other']);
  });

  it.runIf(sandboxStatus().kind === 'bwrap')(
    "refuses plan code in a sandbox that shares the machine's network, before any handler",
    async () => {
      const { url, handled } = await guarded();
      const args = bwrapArgs({
        writable: [],
        hidden: [],
        network: 'host',
        cwd: tmpdir(),
        command: `${process.execPath} -e '${FETCH(`${url}/from-the-sandbox`)}'`,
      });
      const out = await fetchFrom('bwrap', args);
      expect(out).toMatch(/^403 .*comes from plan code \(process \d+, in a sandbox's own PID namespace\)/);
      expect(handled).toEqual([]);
    },
  );
});
