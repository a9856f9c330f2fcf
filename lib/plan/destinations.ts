/**
 * Where a call goes, as the harness understands it, for the platform's policy (lib/policy): the
 * programs a shell call runs (shell/analyze.ts), the hosts it reaches in canonical form (hosts.ts:
 * an http call's URL as the http tool connects to it, a shell call's network programs and
 * `/dev/tcp`, any URL in its strings), why it may reach a host not listed (`unknownDestinations`),
 * and the AWS services and Lambda functions it calls by any route: the `lambda` tool, the `aws`
 * CLI, an SDK endpoint host (`lambda.<region>.amazonaws.com`, the invoke path naming the
 * function), a function URL (`<id>.lambda-url.<region>.on.aws`).
 */

import { canonicalUrl } from './hosts.ts';
import type { Contract } from './schema.ts';
import { PROXY_VARIABLE, type ShellConnections, shellConnections } from './shell/connections.ts';
import { analyzeShell } from './shell/index.ts';

/**
 * Where a call goes: the same facts a shell command's reading gives ({@link ShellConnections}),
 * for any call (the tools, the `aws` CLI, SDK endpoint hosts, function URLs).
 */
export type CallDestinations = ShellConnections;

export const NO_DESTINATIONS: CallDestinations = {
  programs: [],
  unknownPrograms: [],
  hosts: [],
  unknownDestinations: [],
  awsServices: [],
  lambdaFunctions: [],
};

/** A call of `tool` with `args` (as written, or resolved at run time). */
export function callDestinations(tool: string, args: Readonly<Record<string, unknown>>): CallDestinations {
  const inStrings = hostsOfStrings(args);
  if (tool === 'shell' && typeof args.command === 'string') {
    const env = stringRecord(args.env);
    const network = shellConnections(args.command, analyzeShell(args.command), env);
    const proxies = Object.entries(env)
      .filter(([name]) => PROXY_VARIABLE.test(name))
      .map(([, value]) => urlHostOf(/:\/\//.test(value) ? value : `http://${value}`));
    return merge([
      { ...network, hosts: [...network.hosts, ...inStrings, ...proxies.flatMap((h) => (h ? [h] : []))] },
      ...network.hosts.map(awsOfHost),
      ...urlsOfStrings(args).map(awsOfUrl),
    ]);
  }
  if (tool === 'http') {
    const url = typeof args.url === 'string' ? args.url : '';
    const parsed = canonicalUrl(url);
    // A reference in the origin (`https://${steps.x.host}/`) is filled in only at run time.
    const host = parsed && !/[${}]/.test(parsed.hostname) ? parsed.hostname : undefined;
    const unknown = host
      ? []
      : [
          url.includes('${')
            ? `the URL \`${url}\` is filled in at run time`
            : `\`${url}\` is not a URL the http tool can send to`,
        ];
    return merge([
      { ...NO_DESTINATIONS, hosts: [...(host ? [host] : []), ...inStrings], unknownDestinations: unknown },
      ...(parsed && host ? [awsOfUrl(parsed)] : []),
      ...inStrings.map(awsOfHost),
    ]);
  }
  if (tool === 'lambda') {
    const name = typeof args.functionName === 'string' ? args.functionName : '';
    return merge([
      {
        ...NO_DESTINATIONS,
        hosts: inStrings,
        awsServices: ['lambda'],
        lambdaFunctions: name.includes('${') ? [] : [name],
        unknownDestinations: name.includes('${') ? [`the function \`${name}\` is named at run time`] : [],
      },
    ]);
  }
  if (tool === 'agent')
    return {
      ...NO_DESTINATIONS,
      hosts: inStrings,
      unknownDestinations: ['an agent decides at run time what it runs and reaches'],
    };
  return merge([{ ...NO_DESTINATIONS, hosts: inStrings }, ...inStrings.map(awsOfHost)]);
}

/** A contract's check: a command runs in the shell, an http check sends a request, a lambda one invokes. */
export function contractDestinations(contract: Contract | undefined): CallDestinations {
  if (contract?.kind === 'command') return callDestinations('shell', { command: contract.command });
  if (contract?.kind === 'http')
    return callDestinations('http', { method: contract.method, url: contract.url });
  if (contract?.kind === 'lambda') return callDestinations('lambda', { functionName: contract.functionName });
  return NO_DESTINATIONS;
}

/** Several calls' destinations as one (a step: its call, contract and rollback). */
export function merge(all: readonly CallDestinations[]): CallDestinations {
  const union = (pick: (d: CallDestinations) => readonly string[]) => sortedSet(all.flatMap(pick));
  return {
    programs: union((d) => d.programs),
    unknownPrograms: union((d) => d.unknownPrograms),
    hosts: union((d) => d.hosts),
    unknownDestinations: union((d) => d.unknownDestinations),
    awsServices: union((d) => d.awsServices),
    lambdaFunctions: union((d) => d.lambdaFunctions),
  };
}

/** An AWS endpoint host: `<service>.<region>.amazonaws.com`, a function URL `<id>.lambda-url.<region>.on.aws`. */
function awsOfHost(host: string): CallDestinations {
  const functionUrl = /^([a-z0-9]+)\.lambda-url\.[a-z0-9-]+\.on\.aws$/.exec(host);
  if (functionUrl?.[1])
    return { ...NO_DESTINATIONS, awsServices: ['lambda'], lambdaFunctions: [functionUrl[1]] };
  const endpoint =
    /^(?:[a-z0-9-]+\.)*?([a-z0-9-]+)(?:[.-]fips)?(?:\.(?:dualstack\.)?[a-z]{2}(?:-gov)?-[a-z]+-\d)?\.amazonaws\.com(?:\.cn)?$/.exec(
      host,
    );
  return endpoint?.[1] ? { ...NO_DESTINATIONS, awsServices: [endpoint[1]] } : NO_DESTINATIONS;
}

/** The Lambda invoke API names its function in the path: `/2015-03-31/functions/<name>/invocations`, `/2014-11-13/functions/<name>/invoke-async/`. */
function awsOfUrl(url: URL): CallDestinations {
  const aws = awsOfHost(url.hostname);
  const invoke =
    /^\/2015-03-31\/functions\/([^/]+)\/invocations|^\/2014-11-13\/functions\/([^/]+)\/invoke-async/i.exec(
      url.pathname,
    );
  const name = invoke?.[1] ?? invoke?.[2];
  if (!aws.awsServices.includes('lambda') || name === undefined) return aws;
  let decoded = name;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    // A malformed escape stays as written.
  }
  return { ...aws, lambdaFunctions: [decoded] };
}

/** Every URL in the strings of `value` (a body, a header, a command's text), its canonical host. */
export function hostsOfStrings(value: unknown): string[] {
  return sortedSet(urlsOfStrings(value).map((url) => url.hostname));
}

/** Every URL with a host in the strings of `value`, canonical; a host filled in at run time is left out. */
function urlsOfStrings(value: unknown): URL[] {
  const urls: URL[] = [];
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const match of v.matchAll(URL_IN_TEXT)) {
        const url = canonicalUrl(match[0].replace(/[.,]+$/, ''));
        if (url?.hostname && !/[${}]/.test(url.hostname)) urls.push(url);
      }
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(visit);
  };
  visit(value);
  return urls;
}

/** A URL wherever it stands in a string: a scheme, then what is not a space or a quote. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/{0,2}[^\s'"`<>()|;&]+/gi;

function urlHostOf(text: string): string | undefined {
  const host = canonicalUrl(text.replace(/[.,]+$/, ''))?.hostname;
  return host && !host.includes('$') ? host : undefined;
}

function stringRecord(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object') return {};
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}

const sortedSet = (values: readonly string[]): string[] => [...new Set(values)].sort();
