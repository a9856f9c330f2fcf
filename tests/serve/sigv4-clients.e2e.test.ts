/**
 * Any SigV4 client, as API Gateway accepts them: `plangate serve` is called by curl's
 * `--aws-sigv4` and by botocore's `SigV4Auth` (Debian's python3-botocore), which sign without
 * `x-amz-content-sha256` (optional for execute-api), and by both with a body changed after
 * signing, which must still be refused.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

/** A python3 that can import botocore: Debian's first (what CI installs), then PATH's. */
const python = ['/usr/bin/python3', 'python3'].find(
  (bin) => spawnSync(bin, ['-c', 'import botocore'], { stdio: 'ignore' }).status === 0,
);
const hasCurl = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0;
if (!python) console.warn('sigv4-clients: no python3 with botocore, its cases skip');
if (!hasCurl) console.warn('sigv4-clients: no curl, its cases skip');

const BOTOCORE_CALL = `
import sys, json, urllib.request
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
url, key, secret, body, tamper = sys.argv[1:6]
req = AWSRequest(method='GET' if body == '' else 'POST', url=url, data=body or None,
                 headers={'content-type': 'application/json'} if body else {})
SigV4Auth(Credentials(key, secret), 'execute-api', 'us-east-1').add_auth(req)
data = (body + ' ').encode() if tamper == '1' else (body.encode() if body else None)
r = urllib.request.Request(url, data=data, method=req.method, headers=dict(req.headers.items()))
try:
    with urllib.request.urlopen(r) as resp: print(resp.status)
except urllib.error.HTTPError as e: print(e.code)
`;

import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';

let serve: ChildProcess;
let url: string;
let credentials: { accessKeyId: string; secretAccessKey: string };
let store: string;

beforeAll(async () => {
  store = await mkdtemp(join(tmpdir(), 'plangate-sigv4-'));
  serve = spawn(process.execPath, [...PLANGATE_NODE_ARGS, 'serve', '--store', store], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve(line.trim());
    });
    serve.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  const [own] = JSON.parse(await readFile(join(store, 'credentials.json'), 'utf8')) as (typeof credentials)[];
  credentials = own as typeof credentials;
}, 60_000);

afterAll(async () => {
  serve?.kill('SIGTERM');
  await new Promise((r) => serve?.once('exit', r));
  await rm(store, { recursive: true, force: true });
});

const PLAN = JSON.stringify({
  id: 'sigv4-plan',
  objective: 'Prove any SigV4 client can submit',
  steps: [
    {
      id: 'hello',
      description: 'Echo hello',
      tool: 'echo',
      args: { message: 'hello' },
      contract: { kind: 'assert', expression: 'true' },
    },
  ],
  sizePolicy: { minSteps: 1 },
  approval: { allowAutoApprove: false },
});

async function curl(path: string, body?: string, extra: string[] = []): Promise<number> {
  const args = [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '--aws-sigv4',
    'aws:amz:us-east-1:execute-api',
    '--user',
    `${credentials.accessKeyId}:${credentials.secretAccessKey}`,
    ...(body !== undefined ? ['-H', 'content-type: application/json', '--data-binary', body] : []),
    ...extra,
    new URL(path, url).toString(),
  ];
  const { stdout } = await run('curl', args);
  return Number(stdout);
}

async function botocore(path: string, body = '', tamper = false): Promise<number> {
  const { stdout } = await run(python as string, [
    '-c',
    BOTOCORE_CALL,
    new URL(path, url).toString(),
    credentials.accessKeyId,
    credentials.secretAccessKey,
    body,
    tamper ? '1' : '0',
  ]);
  return Number(stdout.trim());
}

describe.skipIf(!hasCurl)('curl --aws-sigv4', () => {
  it('reads and submits, without x-amz-content-sha256', async () => {
    expect(await curl('/plans/sigv4-plan')).not.toBe(403);
    expect(await curl('/plans', PLAN)).toBeLessThan(300);
  });

  it('is refused when the signature does not match', async () => {
    const wrong = [
      '--aws-sigv4',
      'aws:amz:us-east-1:execute-api',
      '--user',
      `${credentials.accessKeyId}:not-the-secret-key`,
    ];
    expect(await curl('/plans', PLAN, wrong)).toBe(403);
  });
});

describe.skipIf(!python)("botocore's SigV4Auth", () => {
  it('reads and submits, without x-amz-content-sha256', async () => {
    expect(await botocore('/plans/sigv4-plan')).not.toBe(403);
    expect(await botocore('/plans', PLAN)).toBeLessThan(300);
  });

  it('is refused when the body changed after signing', async () => {
    expect(await botocore('/plans', PLAN, true)).toBe(403);
  });
});
