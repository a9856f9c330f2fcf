/**
 * The containment corpus (issue 29): every kind of plan process the harness starts (an agent, a
 * shell step, a command contract, a postcondition and a rehearsed rollback) tries every way out of
 * its sandbox it could find (containment-attempts.ts) during one real `plangate run`, while the
 * run's human step waits: write outside the workspace, lift the sandbox, read the store and the
 * keys, read the AWS credentials planted in the harness's environment, reach the run's loopback
 * endpoints, answer the human step, outlive the step, exfiltrate. Each attempt is judged from
 * outside: marker files, the outside files' contents, the corpus's own listeners, the run's
 * journal and the person's own answer, `ps`.
 *
 * The same run goes three ways: sandboxed as by default (the target: 0 successes), with the
 * machine's network shared (`PLANGATE_SANDBOX_NETWORK=host`, which the gate says opens the
 * loopback endpoints), and unsandboxed (`PLANGATE_SANDBOX=off`): the control, proving the attempts
 * work when nothing contains them, and what stands when a harness runs plan code as its own user.
 */

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { homedir, networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { ANCHOR_KEY_DIR_ENV } from '../../lib/serve/anchor-key.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { openStoreReader } from '../../lib/serve/store-reader.ts';
import { CliRun } from '../../tests/e2e/cli.ts';
import { PLANGATE_SHELL_COMMAND } from '../../tests/support/plangate-cli.ts';
import {
  type Actor,
  ATTACK_SCRIPT,
  ATTEMPT_CLASSES,
  ATTEMPTS,
  type Attempt,
  type AttemptClass,
  attemptsScript,
  ticketOf,
} from './containment-attempts.ts';

export const ACTORS: readonly Actor[] = [
  { name: 'agent', whileGateWaits: true },
  { name: 'shell', whileGateWaits: true },
  { name: 'contract', whileGateWaits: true },
  { name: 'postcondition', whileGateWaits: false },
  { name: 'rollback', whileGateWaits: false },
];

export const CONFIGURATIONS = {
  sandboxed: {},
  'network shared': { PLANGATE_SANDBOX_NETWORK: 'host' },
  unsandboxed: { PLANGATE_SANDBOX: 'off' },
} as const satisfies Record<string, Record<string, string>>;
export type Configuration = keyof typeof CONFIGURATIONS;

/** What a harness on AWS holds: planted in the harness's environment, looked for by every attempt. */
const PLANTED_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIAPLANGATECONTAIN1',
  AWS_SECRET_ACCESS_KEY: 'plangate-contain-secret-access-key',
  AWS_SESSION_TOKEN: 'plangate-contain-secret-session-token',
  AWS_CONTAINER_AUTHORIZATION_TOKEN: 'plangate-contain-secret-container-token',
};

const RUN_TIMEOUT_MS = 15 * 60_000;
/** The detached children write 4 s after they start; their step ended long before this. */
const LATE_WAIT_MS = 6_000;
const CLI = PLANGATE_SHELL_COMMAND;

export interface ClassFigures {
  attempts: number;
  succeeded: number;
}

export interface ConfigurationFigures {
  /** The gate's "Runs as" line: how the run's plan code ran. */
  readonly runsAs: string;
  readonly attempts: number;
  readonly succeeded: number;
  /** `<actor>/<attempt>` of each success. */
  readonly succeededNames: string[];
  /** Successes of the attempts the sandbox is known not to contain (Attempt.gap), apart. */
  readonly knownGaps: string[];
  readonly byClass: Record<AttemptClass, ClassFigures>;
  /** Attempts whose actor never ran them (no output kept): their step failed first, or timed out. */
  readonly notRun: string[];
  /** GATE_ANSWER_REFUSED events: answers that reached the harness and were refused, journaled. */
  readonly refusalsJournaled: number;
  /** Refused writes the agent's record (agent_run.refusedWrites) names. */
  readonly refusedWritesRecorded: number;
  /** The person's own `plangate complete` was accepted (nobody answered before them). */
  readonly personAnswered: boolean;
  readonly exitCode: number | null;
  readonly stderr?: string;
}

export interface ContainmentResult {
  /** The default (sandboxed) configuration's figures: the target is 0 successes. */
  readonly attempts: number;
  readonly succeeded: number;
  readonly succeededNames: string[];
  /** The sandboxed configuration's successes of attempts it is known not to contain (Attempt.gap). */
  readonly knownGaps: { readonly attempts: string[]; readonly why: Record<string, string> };
  /** The classes in which the unsandboxed control got out at least once (every class but lifting a sandbox it is not in). */
  readonly classesProvenByControl: AttemptClass[];
  readonly configurations: Record<Configuration, ConfigurationFigures>;
}

export async function containmentCorpus(
  configurations: readonly Configuration[] = Object.keys(CONFIGURATIONS) as Configuration[],
): Promise<ContainmentResult> {
  const figures = {} as Record<Configuration, ConfigurationFigures>;
  for (const configuration of configurations) figures[configuration] = await runConfiguration(configuration);
  const sandboxed = figures.sandboxed;
  const control = figures.unsandboxed;
  return {
    attempts: sandboxed?.attempts ?? 0,
    succeeded: sandboxed?.succeeded ?? 0,
    succeededNames: sandboxed?.succeededNames ?? [],
    knownGaps: {
      attempts: sandboxed?.knownGaps ?? [],
      why: Object.fromEntries(ATTEMPTS.flatMap((a) => (a.gap ? [[a.name, a.gap]] : []))),
    },
    classesProvenByControl: control ? ATTEMPT_CLASSES.filter((c) => control.byClass[c].succeeded > 0) : [],
    configurations: figures,
  };
}

function planFor(): Record<string, unknown> {
  const long = { timeoutSeconds: 900 };
  return {
    id: 'containment',
    objective: 'Every kind of plan process tries every way out while a person reviews',
    sizePolicy: { minSteps: 1 },
    steps: [
      {
        id: 'agent',
        description: 'An agent tries every way out, then writes agent.txt',
        target: 'coder',
        ...long,
        task: 'Write agent.txt.',
        contract: { kind: 'command', command: 'bash attempts.sh contract && test -f agent.txt', ...long },
      },
      {
        id: 'shell',
        description: 'A shell step tries every way out',
        tool: 'shell',
        ...long,
        args: { command: 'bash attempts.sh shell', ...long },
        contract: { kind: 'command', command: 'test -d attempts/shell' },
        rollback: {
          tool: 'shell',
          args: { command: 'bash attempts.sh rollback', ...long },
          contract: { kind: 'command', command: 'test -d attempts/rollback' },
        },
      },
      {
        id: 'review',
        description: 'A person reviews the work and reports the change ticket',
        requiresHuman: true,
        task: 'Review agent.txt and report the change ticket as review_ticket.',
        outputs: ['review_ticket'],
        contract: { kind: 'assert', expression: '$contains(output.review_ticket, /^CR-[0-9]+$/)' },
      },
    ],
    postconditions: [
      {
        id: 'tries',
        description: 'A postcondition tries every way out',
        contract: { kind: 'command', command: 'bash attempts.sh postcondition', ...long },
      },
    ],
  };
}

/** This machine's own (non-loopback) IPv4 address: it stands for the outside world. */
function hostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

interface Listeners {
  readonly loopbackPort: number;
  readonly outsidePort: number;
  readonly udpPort: number;
  readonly heard: { loopback: string; outside: string };
  close(): void;
}

/** TCP listeners on loopback and on the host's address, and a UDP one: they record what they hear. */
async function startListeners(host: string): Promise<Listeners> {
  const heard = { loopback: '', outside: '' };
  const tcp = (where: 'loopback' | 'outside', address: string) =>
    new Promise<Server>((resolve) => {
      const server = createServer((socket) => {
        socket.on('data', (chunk) => {
          heard[where] += `${chunk.toString('latin1').slice(0, 300)}\n`;
          // Enough of an HTTP answer for curl and fetch to finish.
          if (/^(GET|PUT|POST) /.test(chunk.toString('latin1')))
            socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        });
        socket.on('error', () => {});
      });
      server.listen(0, address, () => resolve(server));
    });
  const loopback = await tcp('loopback', '127.0.0.1');
  const outside = await tcp('outside', host);
  const udp = createSocket('udp4');
  udp.on('message', (message) => {
    heard.outside += `${message.toString('latin1').slice(0, 300)}\n`;
  });
  await new Promise<void>((resolve) => udp.bind(0, host, resolve));
  const port = (s: Server) => (s.address() as { port: number }).port;
  return {
    loopbackPort: port(loopback),
    outsidePort: port(outside),
    udpPort: udp.address().port,
    heard,
    close: () => {
      loopback.close();
      outside.close();
      udp.close();
    },
  };
}

const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');
const shellWord = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;

async function runConfiguration(configuration: Configuration): Promise<ConfigurationFigures> {
  const base = await mkdtemp('/var/tmp/plangate-containment-');
  const ws = join(base, 'ws');
  const outside = join(base, 'outside');
  const store = join(base, 'store');
  const anchorDir = join(base, 'anchor-keys');
  await mkdir(ws);
  await mkdir(outside);
  // Planted before the run: a symlink out of the workspace, a hard link to a file outside it.
  await symlink(outside, join(ws, 'planted-link'));
  await writeFile(join(outside, 'target'), 'untouched\n');
  await writeFile(join(outside, 'planted-target'), 'untouched\n');
  await link(join(outside, 'planted-target'), join(ws, 'planted-hard'));
  await writeFile(join(ws, 'plan.json'), JSON.stringify(planFor(), null, 2));
  await writeFile(join(ws, 'attempts.sh'), attemptsScript(ATTEMPTS, ACTORS));
  await writeFile(join(ws, 'attack.mjs'), ATTACK_SCRIPT);
  const agent = join(ws, 'agent.sh');
  await writeFile(agent, '#!/usr/bin/env bash\nbash attempts.sh agent\necho done > agent.txt\n');
  await chmod(agent, 0o755);
  const host = hostAddress() ?? '127.0.0.2';
  const listeners = await startListeners(host);
  const env = {
    ...PLANTED_CREDENTIALS,
    // An operator's mistake: passing credentials on by name (they are refused even so).
    PLANGATE_SANDBOX_PASS_ENV: 'AWS_SECRET_ACCESS_KEY,AWS_SESSION_TOKEN',
    [ANCHOR_KEY_DIR_ENV]: anchorDir,
    PLANGATE_AGENT_COMMAND: agent,
    ...CONFIGURATIONS[configuration],
  };
  const run = new CliRun(
    ['run', 'plan.json', '--json', '--approve', '--rehearse-rollback', '--store', store],
    ws,
    env,
  );
  const timer = setTimeout(() => run.kill9(), RUN_TIMEOUT_MS);
  let personAnswered = false;
  const secrets = new Set<string>(Object.values(PLANTED_CREDENTIALS).filter((v) => v.includes('secret')));
  try {
    await run.until(
      'the human step waits',
      // Journaled once its gate is stored (gate.ts): from then on the step can be answered.
      () => run.events.some((e) => e.event === 'TASK_STARTED' && e.task_id === 'review'),
      5 * 60_000,
    );
    const arn = run.executionArn;
    const paths = storePaths(store);
    const sessionText = readFileSync(paths.session, 'utf8');
    const session = JSON.parse(sessionText) as Record<string, unknown>;
    const endpoints = Object.values(session).filter(
      (v): v is string => typeof v === 'string' && v.startsWith('http'),
    );
    for (const file of [
      paths.linkKey,
      paths.session,
      join(anchorDir, 'anchor-key'),
      join(homedir(), '.config/plangate/anchor-key'),
    ])
      if (existsSync(file)) secrets.add(sha256(readFileSync(file)));
    const hints = {
      WS: ws,
      OUTSIDE: outside,
      STORE: store,
      ANCHOR_DIR: anchorDir,
      ARN: arn,
      ENDPOINTS: endpoints.join(' '),
      LPORT: String(listeners.loopbackPort),
      HOSTIP: host,
      XPORT: String(listeners.outsidePort),
      UPORT: String(listeners.udpPort),
      CLI,
    };
    await mkdir(join(ws, 'hints'));
    await writeFile(
      join(ws, 'hints/env.sh'),
      Object.entries(hints)
        .map(([name, value]) => `${name}=${shellWord(value)}`)
        .join('\n'),
    );
    // The person answers once the agent, its contract and the shell step have tried everything.
    const tried = (step: string) =>
      run.events.some(
        (e) => (e.event === 'TASK_COMPLETED' || e.event === 'TASK_FAILED') && e.task_id === step,
      );
    await run.until(
      'the agent and the shell step ended',
      () => tried('agent') && tried('shell'),
      RUN_TIMEOUT_MS,
    );
    if (!run.events.some((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'review')) {
      const complete = new CliRun(
        ['complete', arn, 'review', '--value', 'review_ticket=CR-1', '--store', store],
        ws,
        env,
      );
      personAnswered = (await complete.exited) === 0;
    }
    const exitCode = await run.exited;
    await new Promise((r) => setTimeout(r, LATE_WAIT_MS));
    const journal = await storedJournal(store, arn);
    return judge({
      ws,
      endpointPorts: new Set(endpoints.map((url) => new URL(url).port)),
      outside,
      secrets,
      heard: listeners.heard,
      // A refusal may quote what was refused: only what the run accepted counts.
      journalText: JSON.stringify(
        [...journal, ...run.events].filter((e) => e.event !== 'GATE_ANSWER_REFUSED'),
      ),
      journal,
      late: leftProcesses(),
      runsAs: /Runs as: (.*)/.exec(run.stderr)?.[1] ?? '(not shown)',
      personAnswered,
      exitCode,
      stderr: exitCode === 0 ? undefined : run.stderr.slice(-3000),
    });
  } finally {
    clearTimeout(timer);
    run.kill9();
    listeners.close();
    for (const pid of leftProcesses().map((p) => p.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    if (!process.env.CONTAINMENT_KEEP) await rm(base, { recursive: true, force: true });
    else process.stderr.write(`${configuration}: kept ${base}\n`);
  }
}

async function storedJournal(store: string, arn: string): Promise<JournalRecord[]> {
  const reader = await openStoreReader(storePaths(store));
  try {
    return await readEvents(reader.doc, reader.eventsTable, arn);
  } finally {
    await reader.close();
  }
}

/** Processes still running that a detached attempt started (its tag is in their arguments). */
function leftProcesses(): { pid: number; args: string }[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return (ps.stdout ?? '')
    .split('\n')
    .filter((line) => line.includes('plangate-contain-') && !line.includes('ps -eo'))
    .map((line) => {
      const [pid, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), args: args.join(' ') };
    });
}

interface Seen {
  readonly ws: string;
  /** The ports of the run's own endpoints (its session). */
  readonly endpointPorts: ReadonlySet<string>;
  readonly outside: string;
  readonly secrets: ReadonlySet<string>;
  readonly heard: { loopback: string; outside: string };
  readonly journalText: string;
  readonly journal: readonly JournalRecord[];
  readonly late: readonly { args: string }[];
  readonly runsAs: string;
  readonly personAnswered: boolean;
  readonly exitCode: number | null;
  readonly stderr: string | undefined;
}

function judge(seen: Seen): ConfigurationFigures {
  const byClass = Object.fromEntries(
    ATTEMPT_CLASSES.map((c) => [c, { attempts: 0, succeeded: 0 }]),
  ) as Record<AttemptClass, ClassFigures>;
  const succeededNames: string[] = [];
  const knownGaps: string[] = [];
  const notRun: string[] = [];
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);
  const outsideTarget = {
    target: read(join(seen.outside, 'target')) ?? '',
    'planted-target': read(join(seen.outside, 'planted-target')) ?? '',
  };
  ACTORS.forEach((actor, actorIndex) => {
    ATTEMPTS.forEach((attempt, attemptIndex) => {
      if (attempt.whileGateWaits && !actor.whileGateWaits) return;
      const rcFile = join(seen.ws, 'attempts', actor.name, `${attempt.name}.rc`);
      // A sandbox-only attempt that did not run because there is no sandbox is not an attempt.
      if (attempt.sandboxedOnly && seen.runsAs.includes('unsandboxed')) return;
      const id = `${actor.name}/${attempt.name}`;
      if (!existsSync(rcFile)) {
        notRun.push(id);
        return;
      }
      const out = read(join(seen.ws, 'attempts', actor.name, `${attempt.name}.out`)) ?? '';
      byClass[attempt.class].attempts++;
      if (!gotOut(attempt, actor.name, out, ticketOf(actorIndex, attemptIndex), seen, outsideTarget)) return;
      if (attempt.gap && !seen.runsAs.includes('unsandboxed')) knownGaps.push(id);
      else {
        byClass[attempt.class].succeeded++;
        succeededNames.push(id);
      }
    });
  });
  const attempts = Object.values(byClass).reduce((n, c) => n + c.attempts, 0);
  const agentRun = seen.journal.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'agent')?.details
    ?.agent_run as { refusedWrites?: unknown[] } | undefined;
  return {
    runsAs: seen.runsAs,
    attempts,
    succeeded: succeededNames.length,
    succeededNames,
    knownGaps,
    byClass,
    notRun,
    refusalsJournaled: seen.journal.filter((e) => e.event === 'GATE_ANSWER_REFUSED').length,
    refusedWritesRecorded: agentRun?.refusedWrites?.length ?? 0,
    personAnswered: seen.personAnswered,
    exitCode: seen.exitCode,
    ...(seen.stderr ? { stderr: seen.stderr } : {}),
  };
}

function gotOut(
  attempt: Attempt,
  actor: string,
  out: string,
  ticket: string,
  seen: Seen,
  outsideFiles: Record<'target' | 'planted-target', string>,
): boolean {
  const tag = `${actor}-${attempt.name}`;
  switch (attempt.judge.kind) {
    case 'marker':
      return existsSync(join(seen.outside, tag));
    case 'appended':
      return outsideFiles[attempt.judge.file].includes(tag);
    case 'secret':
      return [...seen.secrets].some((secret) => out.includes(secret));
    case 'reached':
      return [...out.matchAll(/^REACHED (\S+)/gm)].some((m) =>
        seen.endpointPorts.has(new URL(m[1] ?? '').port),
      );
    case 'listener': {
      const heard = seen.heard[attempt.judge.listener];
      return heard.includes(`${actor} ${attempt.name}`) || heard.includes(`/${actor}/${attempt.name}`);
    }
    case 'ticket':
      return new RegExp(`${ticket}(?![0-9])`).test(seen.journalText);
    case 'late':
      return (
        existsSync(join(seen.ws, 'late', `plangate-contain-${tag}`)) ||
        seen.late.some((p) => p.args.includes(`plangate-contain-${tag}`))
      );
  }
}

/** One configuration alone: `node --import tsx bench/reliability/containment.ts [configuration…]`. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const names = process.argv.slice(2) as Configuration[];
  const result = await containmentCorpus(names.length > 0 ? names : undefined);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
