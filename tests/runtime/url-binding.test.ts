// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * fillUrl: a value fills a path segment or a query value as data (percent-encoded), never a
 * `.`/`..` segment, and the request keeps the approved origin and path prefix.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../lib/runtime/secrets/redact.ts';
import { fillUrl, resolveHttpRequest } from '../../lib/runtime/secrets/url-binding.ts';
import { InvalidInputError } from '../../lib/runtime/shared/errors.ts';

const REF = '${steps.meta.i}';
const fill = (url: string, value: string) => fillUrl(url, new Map([[REF, value]]), 'steps.fetch.args.url');

describe('fillUrl', () => {
  it('keeps ../admin/wipe?confirm=yes inside its path segment', () => {
    const url = fill(`http://127.0.0.1:8080/api/releases/${REF}`, '../admin/wipe?confirm=yes');
    expect(url).toBe('http://127.0.0.1:8080/api/releases/..%2Fadmin%2Fwipe%3Fconfirm%3Dyes');
    expect(new URL(url).pathname).toBe('/api/releases/..%2Fadmin%2Fwipe%3Fconfirm%3Dyes');
  });

  it('encodes a query value, so it adds no parameter', () => {
    const url = fill(`https://api.example.com/search?q=${REF}&limit=5`, 'x&admin=1#frag');
    expect(new URL(url).searchParams.get('q')).toBe('x&admin=1#frag');
    expect(new URL(url).searchParams.get('admin')).toBeNull();
    expect(new URL(url).hash).toBe('');
  });

  it.each(['.', '..', '%2e', '%2E%2e', '.%2E', '%252e%252e', '．．'])(
    'refuses a path segment that reads as . or .. (%s)',
    (value) => {
      expect(() => fill(`https://h.example/api/releases/${REF}`, value)).toThrow(InvalidInputError);
      expect(() => fill(`https://h.example/api/releases/${REF}`, value)).toThrow(/steps\.fetch\.args\.url/);
    },
  );

  it('refuses a dot segment the template and the value spell together', () => {
    expect(() => fill(`https://h.example/api/.${REF}/x`, '.')).toThrow(/"\.\."/);
    expect(() => fill(`https://h.example/api/%2e${REF}/x`, '.')).toThrow(InvalidInputError);
  });

  it.each([
    [`${REF}/api`, 'scheme, user info or host'],
    [`https://${REF}/api`, 'host'],
    [`https://user:${REF}@h.example/api`, 'host'],
    [`https://h.example/api?${REF}=1`, 'query parameter name'],
    [`https://h.example/api#${REF}`, 'fragment'],
  ])('refuses a reference in %s', (url, where) => {
    expect(() => fill(url, 'x')).toThrow(new RegExp(where));
  });

  it('fills a whole port after a literal host only with a port number', () => {
    expect(fill(`http://127.0.0.1:${REF}/report.json`, '8080')).toBe('http://127.0.0.1:8080/report.json');
    for (const value of ['80@evil.example', '0', '65536', '80/x', ''])
      expect(() => fill(`http://127.0.0.1:${REF}/report.json`, value)).toThrow(/port number/);
  });

  it('for any value, keeps the origin and the path prefix, and the segment decodes back to the value', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (value) => {
        let url: string;
        try {
          url = fill(`https://api.example.com:8443/api/releases/${REF}/notes?x=1`, value);
        } catch (error) {
          // Only a dot segment is refused.
          expect(error).toBeInstanceOf(InvalidInputError);
          expect(['.', '..']).toContain(decodeAll(encodeURIComponent(value)).normalize('NFKC'));
          return;
        }
        const parsed = new URL(url);
        expect(parsed.origin).toBe('https://api.example.com:8443');
        expect(parsed.pathname.startsWith('/api/releases/')).toBe(true);
        expect(parsed.pathname.endsWith('/notes')).toBe(true);
        expect(parsed.search).toBe('?x=1');
        const segment = parsed.pathname.slice('/api/releases/'.length, -'/notes'.length);
        expect(decodeURIComponent(segment)).toBe(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('for any value in a query value, the parameter reads back as the value and nothing else is added', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (value) => {
        const parsed = new URL(fill(`https://api.example.com/find?id=${REF}&page=2`, value));
        expect(parsed.origin).toBe('https://api.example.com');
        expect(parsed.pathname).toBe('/find');
        expect([...parsed.searchParams.keys()]).toEqual(['id', 'page']);
        expect(parsed.searchParams.get('id')).toBe(value);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('resolveHttpRequest', () => {
  const scope = { steps: { meta: { i: '../admin', h: 'ok\r\nX-Admin: 1' } }, context: {} };

  it('fills the URL as data and refuses a header value that would start another header', async () => {
    const request = await resolveHttpRequest(
      { method: 'GET', url: `https://h.example/a/${REF}`, headers: { 'x-id': '${steps.meta.i}' } },
      scope,
      'steps.fetch.args',
    );
    expect(request).toEqual({
      method: 'GET',
      url: 'https://h.example/a/..%2Fadmin',
      headers: { 'x-id': '../admin' },
    });
    await expect(
      resolveHttpRequest(
        { url: 'https://h.example/', headers: { 'x-id': '${steps.meta.h}' } },
        scope,
        'contract',
      ),
    ).rejects.toThrow(/contract\.headers\.x-id: a header value may not contain CR, LF or NUL/);
  });
});

describe('Redactor', () => {
  it('hides a secret in its percent-encoded spelling too (as a URL carries it)', () => {
    const redactor = new Redactor(['s3cr/t+value']);
    expect(redactor.text(`GET https://h.example/x/${encodeURIComponent('s3cr/t+value')} failed`)).toBe(
      'GET https://h.example/x/*** failed',
    );
  });
});

function decodeAll(text: string): string {
  let out = text;
  for (let i = 0; i < 8; i++) {
    let next: string;
    try {
      next = decodeURIComponent(out);
    } catch {
      return out;
    }
    if (next === out) return out;
    out = next;
  }
  return out;
}

describe('fillUrl on text with no UTF-8 form', () => {
  it('refuses a lone surrogate with a located InvalidInput', () => {
    expect(() => fill(`https://h.example/a/${REF}`, '\ud800')).toThrow(InvalidInputError);
  });
});
