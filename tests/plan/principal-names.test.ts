import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  distinctPrincipals,
  namesPrincipal,
  principalName,
  samePrincipal,
} from '../../lib/plan/principal-names.ts';

describe('principalName: one spelling per person', () => {
  it('an email is lower-cased whole, its domain as IDNA ASCII without a trailing dot', () => {
    for (const spelled of [
      'MALLORY@EXAMPLE.COM',
      'Mallory@Example.Com',
      'mallory@example.com.',
      'mallory@ＥＸＡＭＰＬＥ．ＣＯＭ',
      'mallory@example。com',
    ])
      expect(principalName(spelled), spelled).toBe('mallory@example.com');
    expect(principalName('ana@Bücher.DE')).toBe('ana@xn--bcher-kva.de');
  });

  it('other names are as they are: OS users, IAM ARNs (even with an @ in them), Slack names', () => {
    for (const name of [
      'Root',
      'alice',
      'arn:aws:iam::123456789012:user/Alice@Example.com',
      'U0ABC',
      '@home',
    ])
      expect(principalName(name)).toBe(name);
  });

  it('is idempotent, and two emails differing only in case are one person', () => {
    const local = fc.stringMatching(/^[A-Za-z0-9._+-]{1,12}$/);
    const label = fc.stringMatching(/^[A-Za-z0-9-]{1,10}$/);
    fc.assert(
      fc.property(local, label, fc.boolean(), (l, d, upper) => {
        const email = `${l}@${d}.com`;
        const other = upper ? email.toUpperCase() : email.toLowerCase();
        expect(principalName(principalName(email))).toBe(principalName(email));
        expect(samePrincipal(email, other)).toBe(true);
        expect(namesPrincipal([other], email)).toBe(true);
      }),
    );
  });

  it('distinctPrincipals counts a person once however spelled', () => {
    expect(distinctPrincipals(['alice@example.com', 'ALICE@example.com', 'bob', 'Bob'])).toEqual([
      'alice@example.com',
      'bob',
      'Bob',
    ]);
  });
});
