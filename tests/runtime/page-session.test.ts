/**
 * Page sessions on their own: a sealed cookie opens only its own handle's page, only until it
 * expires (never past its link's expiry), only under the key it was sealed with; Secure except on
 * loopback HTTP.
 */
import { describe, expect, it } from 'vitest';
import type { HttpEvent } from '../../lib/runtime/api/http.ts';
import { formTokenMatches, isLocalHttp, PageSessions } from '../../lib/runtime/api/page-session.ts';

const KEY = 'p'.repeat(40);
const LINK = 'approval.1900000000.mac';

function event(
  cookie: string | undefined,
  domainName = 'abc.execute-api.eu-west-1.amazonaws.com',
): HttpEvent {
  return {
    headers: {},
    ...(cookie ? { cookies: [cookie] } : {}),
    requestContext: { domainName },
  } as unknown as HttpEvent;
}

const cookieValueOf = (setCookie: string) => setCookie.split(';')[0] as string;

describe('page sessions', () => {
  it('open their own handle only, with the link and a form token, until they expire', () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const sessions = new PageSessions(KEY, () => now);
    const { handle, cookie } = sessions.open(LINK, Math.floor(now.getTime() / 1000) + 3600, { secure: true });
    expect(cookie).toMatch(
      /; Path=\/approvals\/[A-Za-z0-9_-]{22}; Max-Age=1800; HttpOnly; SameSite=Strict; Secure$/,
    );
    expect(cookie).not.toContain('mac');
    const session = sessions.read(event(cookieValueOf(cookie)), handle);
    if ('refused' in session) throw new Error(session.message);
    expect(session.link).toBe(LINK);
    expect(formTokenMatches(session, session.form)).toBe(true);
    expect(formTokenMatches(session, `${session.form.slice(1)}x`)).toBe(false);
    expect(formTokenMatches(session, undefined)).toBe(false);

    const other = sessions.open(LINK, 1_900_000_000, { secure: true }).handle;
    expect(sessions.read(event(cookieValueOf(cookie)), other)).toMatchObject({ refused: 'forged' });
    expect(
      new PageSessions('q'.repeat(40), () => now).read(event(cookieValueOf(cookie)), handle),
    ).toMatchObject({
      refused: 'forged',
    });
    expect(sessions.read(event(undefined), handle)).toMatchObject({ refused: 'none' });
    now = new Date(now.getTime() + 1800 * 1000);
    expect(sessions.read(event(cookieValueOf(cookie)), handle)).toMatchObject({ refused: 'expired' });
  });

  it('never outlive their link', () => {
    const now = new Date('2030-01-01T00:00:00Z');
    const sessions = new PageSessions(KEY, () => now);
    const { cookie } = sessions.open(LINK, Math.floor(now.getTime() / 1000) + 60, { secure: false });
    expect(cookie).toMatch(/; Max-Age=60; HttpOnly; SameSite=Strict$/);
  });

  it('are Secure except on loopback HTTP', () => {
    expect(isLocalHttp(event(undefined, '127.0.0.1:4321'))).toBe(true);
    expect(isLocalHttp(event(undefined, 'localhost'))).toBe(true);
    expect(isLocalHttp(event(undefined, 'abc.execute-api.eu-west-1.amazonaws.com'))).toBe(false);
  });
});
