/**
 * Values into an HTTP request as data. In the URL a value fills only a path segment or a query
 * value, percent-encoded (so `../admin?x=1` stays inside its segment), never a `.`/`..` segment,
 * and the request still goes to the approved scheme, host, port and path; header values may not
 * start another header; the body is data already (JSON-encoded by the tool). Where a reference
 * may sit is lib/plan/url-template.ts, which the validator enforces before a plan reaches a gate.
 */
import {
  FILLABLE_URL_PARTS,
  urlBounds,
  urlPartAdvice,
  urlReferencePlacements,
} from '../../plan/url-template.ts';
import { InvalidInputError } from '../shared/errors.ts';
import { lookupReference, type ReferenceScope, resolveReferences } from './references.ts';

/**
 * `url` with each reference (by its raw text) replaced by its value, percent-encoded
 * (encodeURIComponent), a port slot with a port number. Throws InvalidInputError when a reference sits where a value may not go,
 * has no value, makes a `.` or `..` path segment in any spelling, or the filled URL's scheme,
 * host, port or path before the first reference differs from the template's.
 */
export function fillUrl(url: string, values: ReadonlyMap<string, string>, location = 'url'): string {
  const placements = urlReferencePlacements(url);
  if (placements.length === 0) return url;
  const refuse = (message: string): never => {
    throw new InvalidInputError(message, { location });
  };
  // Filled up to `end`: the whole URL, and the approved part (before the first path or query value).
  const fill = (end: number): string => {
    let out = '';
    let last = 0;
    for (const p of placements) {
      if (p.index >= end) break;
      if (!FILLABLE_URL_PARTS.has(p.part)) refuse(`${p.raw}: ${urlPartAdvice(p.part)}`);
      const value = values.get(p.raw);
      if (value === undefined) return refuse(`${p.raw} has no value to fill the URL with`);
      if (p.part === 'port' && !isPort(value))
        refuse(`${p.raw} fills the port, so its value must be a port number (1–65535)`);
      out += url.slice(last, p.index) + (p.part === 'port' ? value : encoded(value, p.raw, location));
      last = p.index + p.raw.length;
    }
    return out + url.slice(last, end);
  };
  const filled = fill(url.length);
  const data = placements.find((p) => p.part !== 'port');

  // Encoded values add no delimiter, so the filled URL's segments are the template's.
  const bounds = urlBounds(filled);
  const segments = filled.slice(bounds.pathStart + 1, bounds.queryStart).split('/');
  for (const p of placements)
    if (p.part === 'path' && isDotSegment(segments[p.segment ?? 0] ?? ''))
      refuse(
        `${p.raw} makes the path segment "${segments[p.segment ?? 0]}", which a server reads as "." or ".." (a step up the path); a value may not do that`,
      );

  const parsed = parse(filled);
  const approved = parse(fill(data?.index ?? url.length));
  if (!parsed || !approved) return refuse('the URL with its values filled in is not a valid URL');
  const samePath =
    data?.part === 'path'
      ? parsed.pathname.startsWith(approved.pathname)
      : parsed.pathname === approved.pathname;
  if (
    parsed.protocol !== approved.protocol ||
    parsed.username !== approved.username ||
    parsed.password !== approved.password ||
    parsed.host !== approved.host ||
    !samePath
  )
    refuse(
      `the URL with its values filled in no longer starts with "${approved.origin}${approved.pathname}", as approved`,
    );
  return filled;
}

/** `url` with its references looked up in `scope` (the one lookup every reference goes through), then {@link fillUrl}. */
export async function resolveUrl(url: string, scope: ReferenceScope, location: string): Promise<string> {
  const values = new Map<string, string>();
  for (const { raw } of urlReferencePlacements(url)) {
    if (values.has(raw)) continue;
    const value = await lookupReference(raw, scope, location);
    values.set(raw, typeof value === 'string' ? value : JSON.stringify(value));
  }
  return fillUrl(url, values, location);
}

/** An HTTP call's fields (`url`, `headers`, `body`, …) with their references resolved as data. */
export async function resolveHttpRequest(
  request: Readonly<Record<string, unknown>>,
  scope: ReferenceScope,
  location: string,
): Promise<Record<string, unknown>> {
  const { url, headers, ...rest } = request;
  const resolved = (await resolveReferences(rest, scope, location)) as Record<string, unknown>;
  if (typeof url === 'string') resolved.url = await resolveUrl(url, scope, `${location}.url`);
  else if (url !== undefined) resolved.url = url;
  if (headers !== null && typeof headers === 'object') {
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(headers)) {
      const at = `${location}.headers.${name}`;
      const text = await resolveReferences(value, scope, at);
      const header = typeof text === 'string' ? text : JSON.stringify(text);
      if (/[\r\n\0]/.test(header))
        throw new InvalidInputError(
          'a header value may not contain CR, LF or NUL: it would end the header and start another',
          { location: at },
        );
      out[name] = header;
    }
    resolved.headers = out;
  } else if (headers !== undefined) resolved.headers = headers;
  return resolved;
}

function encoded(value: string, raw: string, location: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    // A lone UTF-16 surrogate (from JSON) has no UTF-8 form to percent-encode.
    throw new InvalidInputError(`${raw} is not well-formed text, so it cannot be put in a URL`, { location });
  }
}

function isPort(value: string): boolean {
  return /^[0-9]{1,5}$/.test(value) && Number(value) >= 1 && Number(value) <= 65_535;
}

/** `.` or `..` however it is spelled: percent-encoded (any case, any depth) or in compatibility forms (`．．`). */
function isDotSegment(segment: string): boolean {
  let text = segment;
  for (let round = 0; round < 8; round++) {
    const next = decodeOnce(text);
    if (next === text) break;
    text = next;
  }
  const normal = text.normalize('NFKC');
  return normal === '.' || normal === '..';
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // A stray `%` elsewhere: decode the escapes that are valid.
    return text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
}

function parse(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}
