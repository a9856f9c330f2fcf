/**
 * The run-time injection corpus: values known only at run time (a step's outputs, context, a
 * secret, a value a person reports) carrying shell and URL attacks into every place a plan uses
 * them the documented way (a command's double-quoted or bare word, a step's `env:`, a contract, a
 * rollback and its contract, a postcondition, an http URL's path segment and query value), through
 * the real CLI: one `plangate run --approve --rehearse-rollback` per source, in a fresh workspace.
 *
 * Each payload tries to create its own marker file; a marker that exists is injected code that
 * ran. Each consumer writes what it received to its own file (or the local server records the
 * request), so the corpus also proves the value arrived whole, as data: a corpus where nothing ran
 * would find no marker and prove nothing.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliRun } from '../../tests/e2e/cli.ts';

const MARK = '__M__';
const RUN_TIMEOUT_MS = 10 * 60_000;
/** The contract of a step whose use is not in its contract: the step's own run is what is measured. */
const PASS = { kind: 'command', command: 'true' } as const;

/** Attacks on a shell word: each would run `touch <marker>` (or create it) if pasted as code. */
export const SHELL_PAYLOADS: readonly string[] = [
  `a; touch ${MARK}`,
  `$(touch ${MARK})`,
  `\`touch ${MARK}\``,
  `x" ; touch ${MARK} ; echo "`,
  `x' ; touch ${MARK} ; echo '`,
  `x\ntouch ${MARK}`,
  `x && touch ${MARK}`,
  `x | tee ${MARK}`,
  `x > ${MARK}`,
  `x;{touch,${MARK}}`,
  `x;touch\${IFS}${MARK}`,
  `\u2067; touch ${MARK} \u2069`,
  `a[$(touch ${MARK})]`,
  `commit=x" /dev/null || true; touch ${MARK}; echo "`,
  `\\"; touch ${MARK}; #`,
  `$'\\x3b' touch ${MARK}`,
];

/** Attacks on a URL path segment or query value: each would reach another endpoint if pasted. */
export const URL_PAYLOADS: readonly string[] = [
  '../admin/wipe?confirm=yes',
  '..',
  '.',
  '%2e%2e/admin',
  '..%2Fadmin',
  'x/../../admin',
  '?admin=1',
  '#frag',
  'a&admin=1',
  '@evil.example/',
  'x\r\nX-Injected: 1',
  ...SHELL_PAYLOADS,
];

export const SOURCES = ['step output', 'context', 'secret', 'human value'] as const;
type Source = (typeof SOURCES)[number];

const SHELL_PLACES = [
  'command (quoted)',
  'command (bare word)',
  'env value',
  'contract',
  'rollback',
  'rollback contract',
  'postcondition',
] as const;
const URL_PLACES = ['url path segment', 'url query value'] as const;
type Place = (typeof SHELL_PLACES)[number] | (typeof URL_PLACES)[number];

interface Use {
  readonly id: string;
  readonly place: Place;
  readonly value: string;
  readonly marker: string;
}

export interface SourceFigures {
  readonly uses: number;
  /** Markers created: injected code that ran. */
  readonly injected: string[];
  /** URL requests that reached a path or query the template does not name. */
  readonly escapedUrls: string[];
  /** Uses whose consumer received the value exactly, as data. */
  readonly deliveredIntact: number;
  /** Uses whose consumer received something other than the value (neither intact nor refused). */
  readonly altered: string[];
  /** Uses whose consumer received nothing: the harness refused it (validator or run time), or it never ran. */
  readonly notRun: string[];
  readonly exitCode: number | null;
  /** The end of the run's stderr when it did not exit 0. */
  readonly stderr?: string;
}

export interface InjectionResult {
  readonly uses: number;
  readonly injected: number;
  readonly escapedUrls: number;
  readonly deliveredIntact: number;
  readonly altered: number;
  readonly notRun: number;
  readonly bySource: Record<Source, SourceFigures>;
}

/** The reference a use reads, by source. */
function reference(source: Source, key: string): string {
  switch (source) {
    case 'step output':
      return `\${steps.emit.${key}}`;
    case 'context':
      return `\${context.${key}}`;
    case 'secret':
      return `\${secrets.${key}}`;
    case 'human value':
      return `\${steps.person.${key}}`;
  }
}

/** Every (payload, place) pair, each with its own output key and marker file. */
function usesFor(source: Source): Use[] {
  const uses: Use[] = [];
  // A step's outputs file holds one value a line: a newline cannot reach it.
  const fits = (payload: string) => source !== 'step output' || !/[\r\n]/.test(payload);
  const add = (payload: string, place: Place) => {
    const id = `u${uses.length}`;
    const marker = `m/${id}`;
    uses.push({ id, place, value: payload.replaceAll(MARK, marker), marker });
  };
  for (const payload of SHELL_PAYLOADS.filter(fits)) for (const place of SHELL_PLACES) add(payload, place);
  for (const payload of URL_PAYLOADS.filter(fits)) for (const place of URL_PLACES) add(payload, place);
  return uses;
}

function planFor(source: Source, uses: readonly Use[], port: number): Record<string, unknown> {
  const producer =
    source === 'step output'
      ? [
          {
            id: 'emit',
            description: 'Emit the values from values.txt',
            contract: PASS,
            tool: 'shell',
            args: { command: 'cat values.txt >> "$PLANGATE_OUTPUT"' },
            outputs: uses.map((u) => u.id),
          },
        ]
      : source === 'human value'
        ? [
            {
              id: 'person',
              description: 'A person reports the values',
              contract: PASS,
              requiresHuman: true,
              outputs: uses.map((u) => u.id),
            },
          ]
        : [];
  const after = producer.map((p) => p.id);
  const got = (u: Use, suffix = '') => `got/${u.id}${suffix}`;
  const steps = uses
    .filter((u) => u.place !== 'postcondition')
    .map((u) => {
      const ref = reference(source, u.id);
      const base = {
        id: u.id,
        description: `Use value ${u.id} (${u.place})`,
        dependsOn: after,
        critical: false,
        // A consumer that fails (a refused value, or injected code that broke it) is skipped, not
        // asked about: nobody answers escalations here.
        onFail: { retries: 0, escalation: 'skip' },
        contract: PASS,
      };
      switch (u.place) {
        case 'command (quoted)':
          return { ...base, tool: 'shell', args: { command: `printf '%s' "${ref}" > ${got(u)}` } };
        case 'command (bare word)':
          return { ...base, tool: 'shell', args: { command: `printf '%s' ${ref} > ${got(u)}` } };
        case 'env value':
          return {
            ...base,
            tool: 'shell',
            args: { command: `printf '%s' "$VALUE" > ${got(u)}`, env: { VALUE: ref } },
          };
        case 'contract':
          return {
            ...base,
            tool: 'shell',
            args: { command: 'true' },
            contract: { kind: 'command', command: `printf '%s' "${ref}" > ${got(u)}` },
          };
        case 'rollback':
          return {
            ...base,
            tool: 'shell',
            args: { command: 'true' },
            rollback: { tool: 'shell', args: { command: `printf '%s' "${ref}" > ${got(u)}` } },
          };
        case 'rollback contract':
          return {
            ...base,
            tool: 'shell',
            args: { command: 'true' },
            rollback: {
              tool: 'shell',
              args: { command: 'true' },
              contract: { kind: 'command', command: `printf '%s' "${ref}" > ${got(u)}` },
            },
          };
        case 'url path segment':
          return {
            ...base,
            tool: 'http',
            args: { method: 'GET', url: `http://127.0.0.1:${port}/api/releases/${ref}?use=${u.id}` },
          };
        case 'url query value':
          return {
            ...base,
            tool: 'http',
            args: { method: 'GET', url: `http://127.0.0.1:${port}/api/search?use=${u.id}&q=${ref}` },
          };
        default:
          throw new Error(`no step for ${u.place}`);
      }
    });
  return {
    id: `injection-${source.replace(' ', '-')}`,
    objective: `Carry run-time values from a ${source} into every place a plan uses them`,
    sizePolicy: { minSteps: 1, maxSteps: 1000 },
    context: source === 'context' ? Object.fromEntries(uses.map((u) => [u.id, u.value])) : {},
    secrets:
      source === 'secret'
        ? uses.map((u) => ({ name: u.id, source: 'env', ref: `INJECTION_${u.id.toUpperCase()}` }))
        : [],
    steps: [...producer, ...steps],
    postconditions: uses
      .filter((u) => u.place === 'postcondition')
      .map((u) => ({
        id: u.id,
        description: `Value ${u.id} reaches a postcondition`,
        contract: { kind: 'command', command: `printf '%s' "${reference(source, u.id)}" > ${got(u)}` },
      })),
  };
}

interface Received {
  readonly use: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly raw: string;
}

async function recordingServer(): Promise<{ server: Server; port: number; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    received.push({
      use: url.searchParams.get('use') ?? '',
      path: url.pathname,
      query: url.searchParams,
      raw: req.url ?? '',
    });
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received };
}

async function runSource(source: Source): Promise<SourceFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-injection-'));
  const { server, port, received } = await recordingServer();
  try {
    const uses = usesFor(source);
    await mkdir(join(dir, 'm'));
    await mkdir(join(dir, 'got'));
    await writeFile(join(dir, 'values.txt'), uses.map((u) => `${u.id}=${u.value}\n`).join(''));
    await writeFile(join(dir, 'plan.json'), JSON.stringify(planFor(source, uses, port)));
    const env =
      source === 'secret'
        ? Object.fromEntries(uses.map((u) => [`INJECTION_${u.id.toUpperCase()}`, u.value]))
        : {};
    const store = join(dir, 'store');
    const run = new CliRun(
      ['run', 'plan.json', '--approve', '--json', '--rehearse-rollback', '--store', store],
      dir,
      env,
    );
    if (source === 'human value') {
      const arn = await waitForHumanGate(() => run.stdout, run.exited);
      if (arn) {
        const values = uses.flatMap((u) => ['--value', `${u.id}=${u.value}`]);
        await new CliRun(['complete', arn, 'person', '--store', store, ...values], dir).exited;
      }
    }
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      run.kill9();
    }, RUN_TIMEOUT_MS);
    const exitCode = await run.exited;
    let stderr = run.stderr.slice(-4000);
    clearTimeout(timer);
    if (hung) stderr += `\nkilled after ${RUN_TIMEOUT_MS / 1000} s`;
    if (process.env.INJECTION_KEEP) process.stderr.write(`${source}: ${dir}\n${stderr}\n`);
    return {
      ...(await figures(dir, uses, received, run.stdout, exitCode)),
      ...(exitCode !== 0 ? { stderr } : {}),
    };
  } finally {
    server.close();
    if (!process.env.INJECTION_KEEP) await rm(dir, { recursive: true, force: true });
  }
}

/** The execution ARN once the run waits at the human step; undefined if the run ended first. */
async function waitForHumanGate(
  stdout: () => string,
  exited: Promise<number | null>,
): Promise<string | undefined> {
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const deadline = Date.now() + 5 * 60_000;
  while (!done && Date.now() < deadline) {
    for (const line of stdout().split('\n')) {
      if (!line.startsWith('{')) continue;
      const event = JSON.parse(line) as { event?: string; executionId?: string; task_id?: string };
      // Journaled once the human step's gate is stored (gate.ts): from then on it can be completed.
      if (event.event === 'TASK_STARTED' && event.task_id === 'person') return event.executionId;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return undefined;
}

async function figures(
  dir: string,
  uses: readonly Use[],
  received: readonly Received[],
  stdout: string,
  exitCode: number | null,
): Promise<SourceFigures> {
  const markers = new Set(await readdir(join(dir, 'm')));
  const injected = uses
    .filter((u) => markers.has(u.marker.slice(2)))
    .map((u) => `${u.place}: ${JSON.stringify(u.value)}`);
  const failedSteps = new Set<string>();
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const event = JSON.parse(line) as { event?: string; task_id?: string };
    if (
      (event.event === 'TASK_FAILED' ||
        event.event === 'ROLLBACK_FAILED' ||
        event.event === 'POSTCONDITION_FAILED') &&
      event.task_id
    )
      failedSteps.add(event.task_id);
  }
  const escapedUrls: string[] = [];
  let deliveredIntact = 0;
  const notRun: string[] = [];
  const altered: string[] = [];
  for (const u of uses) {
    let got: string | undefined;
    if (u.place === 'url path segment' || u.place === 'url query value') {
      const requests = received.filter((r) => r.use === u.id);
      for (const r of requests) {
        const segments = r.path.split('/').slice(1);
        const expected =
          u.place === 'url path segment'
            ? segments.length === 3 && segments[0] === 'api' && segments[1] === 'releases'
            : r.path === '/api/search';
        const keys = [...new Set(r.query.keys())].sort().join(',');
        const keysExpected = u.place === 'url path segment' ? keys === 'use' : keys === 'q,use';
        if (!expected || !keysExpected) escapedUrls.push(`${u.place}: ${JSON.stringify(u.value)} → ${r.raw}`);
        else
          got =
            u.place === 'url path segment' ? decodeURIComponent(segments[2] ?? '') : (r.query.get('q') ?? '');
      }
    } else {
      const file = join(dir, 'got', u.id);
      if (existsSync(file)) got = await readFile(file, 'utf8');
    }
    if (got === u.value) deliveredIntact++;
    else if (got === undefined)
      notRun.push(`${u.place}: ${JSON.stringify(u.value)}${failedSteps.has(u.id) ? ' (failed)' : ''}`);
    else altered.push(`${u.place}: ${JSON.stringify(u.value)} arrived as ${JSON.stringify(got)}`);
  }
  for (const r of received) if (r.use === '') escapedUrls.push(`unattributed request ${r.raw}`);
  return { uses: uses.length, injected, escapedUrls, deliveredIntact, altered, notRun, exitCode };
}

export async function runtimeInjectionCorpus(sources: readonly Source[] = SOURCES): Promise<InjectionResult> {
  const bySource = {} as Record<Source, SourceFigures>;
  for (const source of sources) bySource[source] = await runSource(source);
  const sum = (pick: (f: SourceFigures) => number) =>
    Object.values(bySource).reduce((n, f) => n + pick(f), 0);
  return {
    uses: sum((f) => f.uses),
    injected: sum((f) => f.injected.length),
    escapedUrls: sum((f) => f.escapedUrls.length),
    deliveredIntact: sum((f) => f.deliveredIntact),
    altered: sum((f) => f.altered.length),
    notRun: sum((f) => f.notRun.length),
    bySource,
  };
}
