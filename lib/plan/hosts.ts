/**
 * The one reading of a URL and its host that the policy judges and the http tool connects to:
 * the WHATWG URL parser's (what `fetch` itself applies: tabs and newlines dropped, percent-escapes
 * and IDNA decoded, `。`/`．` and full-width letters folded, `https:host` and `https:/host` read as
 * `https://host`), with the DNS root's trailing dot removed (`host.` is the same host). A policy
 * that names `quarantine.example.net` sees every spelling that reaches it as that name.
 */

/** `text` parsed as fetch parses it, its host without trailing dots; undefined when it is not a URL. */
export function canonicalUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.hostname.endsWith('.')) {
    const bare = url.hostname.replace(/\.+$/, '');
    if (bare === '') return undefined;
    url.hostname = bare;
  }
  return url;
}

/** The canonical host of a URL (lower case, IDNA, no trailing dot); undefined when it has none. */
export function urlHost(text: string): string | undefined {
  const host = canonicalUrl(text)?.hostname;
  return host === undefined || host === '' ? undefined : host;
}

/**
 * A bare host name as a network program reads it (`ssh host`, `git@host:repo`), in the same
 * canonical form as a URL's host; undefined when it is not one.
 */
export function canonicalHost(name: string): string | undefined {
  if (name === '' || /[/?#@\s\\]/.test(name)) return undefined;
  return urlHost(`http://${name}/`);
}
