/**
 * The hosts a step's processes may reach (`network.hosts`), as one rule the validator, the gate
 * and the harness's proxy (lib/runtime/sandbox/network-proxy.ts) share: a declared host is written
 * in canonical form (the WHATWG URL host: lower case, IDNA as punycode, no trailing dot), optionally
 * `*.` for any name under it and `:port`; what a client asks the proxy for is canonicalised the same
 * way before it is matched, so no other spelling (upper case, a trailing dot, `%2E`, `．`, Unicode)
 * reaches an undeclared host. Addresses of this machine and its networks (loopback, private,
 * link-local, …) are never a plan's to reach: not as a declared literal, not as what a name resolves to.
 */
import { isIP } from 'node:net';
import type { NetworkAccess, Plan } from './schema.ts';

/** One declared host: a name or a public IP literal, or every name under `host` (`*.`), on one port or the web's two. */
export interface HostRule {
  readonly host: string;
  readonly subdomains: boolean;
  /** Absent: 443 and 80. */
  readonly port?: number;
}

/** Ports a host declared without one may be reached on: https and http. */
export const DEFAULT_PORTS: readonly number[] = [443, 80];

/**
 * A host as the WHATWG URL parser reads it (what a client means), with one trailing dot dropped
 * (the same DNS name); undefined when it is no host at all (empty, a user, a path, a bad IDNA label).
 */
export function canonicalHost(host: string): string | undefined {
  if (host === '' || /[\s/?#@\\]/.test(host)) return undefined;
  if (!host.startsWith('[') && host.includes(':')) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${host}/`);
  } catch {
    return undefined;
  }
  if (url.port !== '' || url.username !== '' || url.password !== '' || url.pathname !== '/') return undefined;
  const canonical = url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
  return canonical === '' || canonical.endsWith('.') ? undefined : canonical;
}

/** A declared entry's rule, or why it is not one (said as how to write it). */
export function parseHostEntry(entry: string): { rule: HostRule } | { problem: string } {
  const split = /^(.*?)(?::(\d{1,5}))?$/.exec(entry) ?? [];
  let name = split[1] ?? entry;
  const portText = split[2];
  if (!name.startsWith('[') && name.includes(':'))
    return {
      problem: `"${entry}" is not a host: write a name (api.github.com), *.name, or either with :port`,
    };
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && (port < 1 || port > 65_535))
    return { problem: `"${entry}": a port is 1 to 65535` };
  const subdomains = name.startsWith('*.');
  if (subdomains) name = name.slice(2);
  if (name.includes('*'))
    return { problem: `"${entry}": the only wildcard is a whole leading label, as in *.pypi.org` };
  if (name.endsWith('.'))
    return {
      problem: `"${entry}": write the host without its trailing dot (${entry.replace(/\.(?=:|$)/, '')})`,
    };
  const canonical = canonicalHost(name);
  if (canonical === undefined)
    return {
      problem: `"${entry}" is not a host: write a name (api.github.com), *.name, or either with :port`,
    };
  const literal = ipLiteral(canonical);
  const reserved = literal === undefined ? undefined : reservedRange(literal);
  if (reserved !== undefined)
    return {
      problem: `"${entry}" is a ${reserved} address, which plan code may never reach (this machine or its networks): declare a public host`,
    };
  if (canonical !== name)
    return {
      problem: `"${entry}" is not in canonical form: write ${subdomains ? '*.' : ''}${canonical}${portText !== undefined ? `:${portText}` : ''}`,
    };
  if (literal !== undefined) {
    if (subdomains) return { problem: `"${entry}": an IP address has no names under it; drop the *.` };
  } else if (canonical === 'localhost' || canonical.endsWith('.localhost'))
    return {
      problem: `"${entry}" is this machine (localhost), which plan code may never reach: declare a public host`,
    };
  else if (subdomains && !canonical.includes('.'))
    return { problem: `"${entry}" covers a whole top-level domain: name one under it, as in *.pypi.org` };
  return { rule: { host: canonical, subdomains, ...(port !== undefined ? { port } : {}) } };
}

/** The rules of entries that parse (the validator has refused a plan whose entries do not). */
export function hostRules(access: NetworkAccess): HostRule[] {
  return access.hosts.flatMap((entry) => {
    const parsed = parseHostEntry(entry);
    return 'rule' in parsed ? [parsed.rule] : [];
  });
}

/** Whether a canonical host and port is one the rules declare. */
export function isDeclared(rules: readonly HostRule[], host: string, port: number): boolean {
  return rules.some(
    (rule) =>
      (rule.port === undefined ? DEFAULT_PORTS.includes(port) : rule.port === port) &&
      (host === rule.host ? !rule.subdomains : rule.subdomains && host.endsWith(`.${rule.host}`)),
  );
}

/** The address an IP-literal host names (without IPv6's brackets), or undefined for a name. */
export function ipLiteral(host: string): string | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return isIP(bare) === 0 ? undefined : bare;
}

/**
 * Why an address is not a plan's to reach (`loopback`, `private`, …), or undefined for a public
 * one. IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address.
 */
export function reservedRange(address: string): string | undefined {
  if (isIP(address) === 4) return reservedV4(address);
  if (isIP(address) !== 6) return 'unparsable';
  const words = ipv6Words(address);
  const embedded = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  const first = words[0] ?? 0;
  if (words.every((w) => w === 0)) return 'unspecified';
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return 'loopback';
  if (words.slice(0, 5).every((w) => w === 0) && (words[5] === 0xffff || words[5] === 0))
    return (
      reservedV4(embedded(words[6] ?? 0, words[7] ?? 0)) ?? (words[5] === 0 ? 'IPv4-compatible' : undefined)
    );
  if (first === 0x64 && words[1] === 0xff9b) return reservedV4(embedded(words[6] ?? 0, words[7] ?? 0));
  if (first === 0x2002) return reservedV4(embedded(words[1] ?? 0, words[2] ?? 0));
  if ((first & 0xfe00) === 0xfc00) return 'private (unique local)';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'site-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x2001 && words[1] === 0x0db8) return 'documentation';
  if (first === 0x0100 && words.slice(1, 4).every((w) => w === 0)) return 'discard';
  return undefined;
}

const V4_RANGES: readonly (readonly [string, number, string])[] = [
  ['0.0.0.0', 8, 'this-network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function reservedV4(address: string): string | undefined {
  const n = v4Number(address);
  const hit = V4_RANGES.find(
    ([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(v4Number(base) / 2 ** (32 - bits)),
  );
  return hit?.[2];
}

/** An IPv6 address's eight 16-bit words (a dotted IPv4 tail read as two). */
function ipv6Words(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4 !== undefined) {
    const n = v4Number(v4);
    text = `${text.slice(0, -v4.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((w) => Number.parseInt(w, 16)));
  const high = part(head);
  const low = tail === undefined ? [] : part(tail);
  return [...high, ...Array(8 - high.length - low.length).fill(0), ...low];
}

export interface NetworkProblem {
  readonly message: string;
  /** JSON pointer into the plan. */
  readonly pointer: string;
}

/** Every declared host that is not one (located at its entry). */
export function networkProblems(plan: Plan): NetworkProblem[] {
  return plan.steps.flatMap((step, i) =>
    (step.network?.hosts ?? []).flatMap((entry, j) => {
      const parsed = parseHostEntry(entry);
      return 'problem' in parsed
        ? [{ message: parsed.problem, pointer: `/steps/${i}/network/hosts/${j}` }]
        : [];
    }),
  );
}

/** A step's hosts as the gate shows them (one fact, every channel): `may reach: api.github.com, *.pypi.org (through plangate's proxy)`. */
export function networkLine(access: NetworkAccess): string {
  return `${NETWORK_LINE_START}${access.hosts.join(', ')} (through plangate's proxy)`;
}

/** How {@link networkLine} starts (the gate marks it as a warning by it). */
export const NETWORK_LINE_START = 'may reach: ';
