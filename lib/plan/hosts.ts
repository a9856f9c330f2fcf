/**
 * The one reading of a URL and its host that the policy judges and the http tool connects to:
 * the WHATWG URL parser's (what `fetch` itself applies: tabs and newlines dropped, percent-escapes
 * and IDNA decoded, `。`/`．` and full-width letters folded, `https:host` and `https:/host` read as
 * `https://host`), with the DNS root's trailing dot removed (`host.` is the same host). A policy
 * that names `quarantine.example.net` sees every spelling that reaches it as that name.
 */
import { canonicalHost } from './network.ts';

/**
 * `text` parsed as fetch parses it, its host in the one canonical form (network.ts
 * `canonicalHost`, which the harness's proxy matches declared hosts by); undefined when it is not
 * a URL, or its host is none (`https://a../`).
 */
export function canonicalUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.hostname === '') return url;
  const host = canonicalHost(url.hostname);
  if (host === undefined) return undefined;
  if (host !== url.hostname) url.hostname = host;
  return url;
}

/** The canonical host of a URL (lower case, IDNA, no trailing dot); undefined when it has none. */
export function urlHost(text: string): string | undefined {
  const host = canonicalUrl(text)?.hostname;
  return host === undefined || host === '' ? undefined : host;
}
