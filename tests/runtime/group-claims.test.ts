import { describe, expect, it } from 'vitest';
import { JwtVerifier } from '../../lib/aws-local/api-gateway/jwt.ts';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { groupsOf, type HttpEvent } from '../../lib/runtime/api/http.ts';

const issuer = new LocalIssuer();
const verifier = new JwtVerifier({ issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks });
const JWT = { mode: 'jwt' } as const;

/** The event API Gateway hands the Lambda: the verified claims (flattened), and the header it verified. */
function eventWith(authorization: string | undefined, claims = verifiedClaims(authorization)): HttpEvent {
  return {
    headers: authorization ? { authorization } : {},
    requestContext: { http: { sourceIp: '203.0.113.9' }, authorizer: { jwt: { claims } } },
  } as unknown as HttpEvent;
}

function verifiedClaims(authorization: string | undefined) {
  const verified = verifier.verify(authorization);
  if (!verified.ok) throw new Error(verified.message);
  return verified.claims;
}

const bearer = (groups: unknown) => `Bearer ${issuer.token('ana@example.com', { 'cognito:groups': groups })}`;

describe('groupsOf: a verified token lists its groups', () => {
  it('reads the list from the verified token, never by splitting what API Gateway flattened', () => {
    expect(groupsOf(eventWith(bearer(['former sre', 'ops,sre'])), JWT)).toEqual(['former sre', 'ops,sre']);
    expect(groupsOf(eventWith(bearer(['sre', 'ops'])), JWT)).toEqual(['sre', 'ops']);
    expect(groupsOf(eventWith(bearer('ops sre')), JWT)).toEqual(['ops sre']);
    expect(groupsOf(eventWith(bearer([])), JWT)).toEqual([]);
  });

  it('proves no group when the token beside the claims is not the one verified, or is missing', () => {
    const verified = verifiedClaims(bearer(['former sre']));
    // Another (unverified) token in the header, claiming sre: its claims are not the verified ones.
    expect(groupsOf(eventWith(bearer(['sre']), verified), JWT)).toEqual([]);
    // No header: a flattened claim cannot be read back as a list; a plain string is one group.
    expect(groupsOf(eventWith(undefined, verified), JWT)).toEqual([]);
    expect(groupsOf(eventWith(undefined, { ...verified, 'cognito:groups': 'sre' }), JWT)).toEqual(['sre']);
  });

  it('only a JWT proves groups', () => {
    expect(groupsOf(eventWith(bearer(['sre'])), { mode: 'iam' })).toEqual([]);
  });
});
