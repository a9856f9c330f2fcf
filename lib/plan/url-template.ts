/**
 * Where a reference sits in a URL template (an http tool's or contract's `url`). A value known
 * only at run time may fill a path segment or a query value, percent-encoded, and nothing else:
 * in the scheme, user info, host or port it would choose where the request goes; in a query name
 * or the fragment it would change what the request means. The validator refuses the other places;
 * the runtime's `fillUrl` (lib/runtime/secrets/url-binding.ts) fills the allowed ones.
 */

/**
 * The part of a URL a reference sits in. `port` is the whole port after a literal host
 * (`http://127.0.0.1:${steps.serve.port}/`): filled only with a port number, so a value can pick
 * which port of the approved host, never another host.
 */
export type UrlPart = 'origin' | 'port' | 'path' | 'query-name' | 'query-value' | 'fragment';

export interface UrlReferencePlacement {
  /** The reference as written, e.g. `${steps.meta.id}`. */
  readonly raw: string;
  /** Offset of the reference in the template. */
  readonly index: number;
  readonly part: UrlPart;
  /** For `path`: which segment (0 is the one right after the host). */
  readonly segment?: number;
}

/** Any `${steps.…}`, `${context.…}` or `${secrets.…}`, well formed or not (the validator names malformed ones). */
const REFERENCE = /\$\{(?:steps|context|secrets)\.[^}]*\}/g;
/** Stands for a reference while the template is split: not a URL delimiter. */
const MASK = '\u0001';

/** Parts where a reference may go. */
export const FILLABLE_URL_PARTS: ReadonlySet<UrlPart> = new Set(['port', 'path', 'query-value']);

/** Every reference in `url`, in order, with the part of the URL it sits in. */
export function urlReferencePlacements(url: string): UrlReferencePlacement[] {
  const refs = [...url.matchAll(REFERENCE)].map((m) => ({ raw: m[0], index: m.index }));
  if (refs.length === 0) return [];
  // One mask character per reference, so the delimiters the template itself writes decide the parts.
  let masked = '';
  let last = 0;
  for (const ref of refs) {
    masked += url.slice(last, ref.index) + MASK;
    last = ref.index + ref.raw.length;
  }
  masked += url.slice(last);
  const bounds = urlBounds(masked);
  let k = 0;
  return [...masked].flatMap((char, i) => {
    if (char !== MASK) return [];
    const ref = refs[k++] as { raw: string; index: number };
    return [{ ...ref, ...partAt(masked, i, bounds) }];
  });
}

/** How to write a reference in a URL, for the validator's and the runtime's refusals. */
export function urlPartAdvice(part: UrlPart): string {
  const where =
    part === 'origin'
      ? 'the scheme, user info or host, or in part of a port (a value would choose where the request goes)'
      : part === 'query-name'
        ? 'a query parameter name'
        : part === 'fragment'
          ? 'the fragment'
          : 'this part';
  return `a reference may not be in ${where}; write that part literally and put the value in a path segment (https://host/items/\${steps.<id>.<output>}) or a query value (?id=\${steps.<id>.<output>}), where it is percent-encoded, or make it the whole port after a literal host (http://127.0.0.1:\${steps.<id>.<output>}/), filled only with a port number`;
}

interface Bounds {
  /** Where the authority (user info, host, port) starts: after `scheme://`; -1 when the template has none. */
  readonly authorityStart: number;
  /** Where the path starts: after `scheme://authority`; -1 when the template has no literal `scheme://`. */
  readonly pathStart: number;
  readonly queryStart: number;
  readonly fragmentStart: number;
}

/** Splits a URL (no references in it, or masked) into its parts' offsets. */
export function urlBounds(url: string): Bounds {
  const fragmentStart = indexOr(url, '#', url.length);
  const queryStart = Math.min(indexOr(url, '?', url.length), fragmentStart);
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url);
  if (!scheme) return { authorityStart: -1, pathStart: -1, queryStart, fragmentStart };
  const rest = url.slice(scheme[0].length);
  const authorityEnd = rest.search(/[/?#]/);
  const pathStart = authorityEnd < 0 ? url.length : scheme[0].length + authorityEnd;
  return {
    authorityStart: scheme[0].length,
    pathStart: Math.min(pathStart, queryStart),
    queryStart,
    fragmentStart,
  };
}

function partAt(masked: string, i: number, b: Bounds): { part: UrlPart; segment?: number } {
  if (b.pathStart < 0 || i < b.pathStart) {
    const authority = masked.slice(b.authorityStart, b.pathStart);
    // Exactly `host:<one reference>`, the host literal (no user info): a port slot.
    const port = /^[^@:[\]\u0001]+:\u0001$|^\[[^\]\u0001]+\]:\u0001$/.test(authority);
    return { part: b.authorityStart >= 0 && port && i === b.pathStart - 1 ? 'port' : 'origin' };
  }
  if (i >= b.fragmentStart) return { part: 'fragment' };
  if (i < b.queryStart) {
    const segment = masked.slice(b.pathStart + 1, i).split('/').length - 1;
    return { part: 'path', segment };
  }
  const pairStart = masked.lastIndexOf('&', i) + 1;
  const pair = masked.slice(Math.max(pairStart, b.queryStart + 1), i);
  return { part: pair.includes('=') ? 'query-value' : 'query-name' };
}

function indexOr(text: string, search: string, fallback: number): number {
  const at = text.indexOf(search);
  return at < 0 ? fallback : at;
}
