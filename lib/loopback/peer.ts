/**
 * Who is on the other end of a loopback connection (Linux): the process holding the client's
 * socket, found through /proc/net/tcp (the socket's inode) and the processes' file descriptors.
 * A process in another PID namespace than this server's is plan code in its sandbox — bubblewrap
 * gives every plan process a PID namespace of its own — and plan code never reaches the harness's
 * endpoints, even where the operator shares the machine's network with it
 * (`PLANGATE_SANDBOX_NETWORK=host`): it would otherwise read the gates table's task tokens and
 * answer its own gate on the engine, or write the journal's table.
 *
 * The harness's own clients are found in its own descriptors first (one directory read); only
 * another process's connection costs a walk of /proc, once per connection.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { Socket } from 'node:net';

export type PeerVerdict =
  | { readonly kind: 'harness' }
  | { readonly kind: 'other'; readonly pid: number }
  | { readonly kind: 'plan code'; readonly pid: number }
  | { readonly kind: 'unknown'; readonly why: string };

const ownPidNamespace = (): string | undefined => link('/proc/self/ns/pid');

/** Who holds the client end of `socket`, a connection accepted on loopback. */
export function peerOf(socket: Pick<Socket, 'remotePort' | 'localPort'>): PeerVerdict {
  if (process.platform !== 'linux') return { kind: 'unknown', why: `no /proc on ${process.platform}` };
  const { remotePort, localPort } = socket;
  if (remotePort === undefined || localPort === undefined)
    return { kind: 'unknown', why: 'the socket is closed' };
  const inode = clientInode(remotePort, localPort);
  if (inode === undefined) return { kind: 'unknown', why: 'its socket is not in /proc/net/tcp' };
  const target = `socket:[${inode}]`;
  if (holds('self', target)) return { kind: 'harness' };
  const own = ownPidNamespace();
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid || !holds(entry, target)) continue;
    const pid = Number(entry);
    const namespace = link(`/proc/${pid}/ns/pid`);
    return namespace !== undefined && namespace === own ? { kind: 'other', pid } : { kind: 'plan code', pid };
  }
  return { kind: 'unknown', why: 'no process this user can see holds its socket' };
}

/**
 * Why a connection is refused, or undefined when it is not plan code. A peer nobody can find is
 * let through: the check is the sandbox's second wall, and a process that closed its socket at
 * once (or a platform without /proc) must not break the harness's own clients.
 */
export function planCodeRefusal(verdict: PeerVerdict): string | undefined {
  if (verdict.kind !== 'plan code') return undefined;
  return `the request comes from plan code (process ${verdict.pid}, in a sandbox's own PID namespace): plangate's local endpoints never answer the processes a plan runs, whatever network they share`;
}

/** The inode of the client socket whose local port is `clientPort`, connected to `serverPort`. */
function clientInode(clientPort: number, serverPort: number): string | undefined {
  const local = `:${hexPort(clientPort)}`;
  const remote = `:${hexPort(serverPort)}`;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl, local_address, rem_address, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode
      if (fields[1]?.endsWith(local) && fields[2]?.endsWith(remote) && fields[9] && fields[9] !== '0')
        return fields[9];
    }
  }
  return undefined;
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}

function holds(pid: string, target: string): boolean {
  const dir = `/proc/${pid}/fd`;
  for (const fd of safeReaddir(dir)) if (link(`${dir}/${fd}`) === target) return true;
  return false;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function link(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
