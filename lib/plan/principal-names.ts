/**
 * A person's name in one canonical form, wherever names are compared: a plan's approvers and
 * forbiddenApprovers, its submitter, a quorum's distinct voters, the policy's principal and its
 * groups file (docs/policy.md, "Names").
 *
 * The identity model: an email names one mailbox whatever its case. Its domain is a DNS name
 * (case-insensitive; IDNA to ASCII, no trailing dot) and plangate treats its local part as
 * case-insensitive too, as Cognito's case-insensitive user pools and the common mail providers
 * do, so `MALLORY@Example.COM` is `mallory@example.com`. Any other name (an OS user, an IAM ARN,
 * a Slack-mapped name) is compared as it is: those systems are case-sensitive.
 */
import { domainToASCII } from 'node:url';

/** `local@domain`, one `@`, no spaces, colons or slashes (so an IAM ARN with an `@` is not an email). */
const EMAIL = /^([^@\s:/]+)@([^@\s:/]+)$/u;

/** The canonical form of a principal's name: what every comparison of names compares. */
export function principalName(name: string): string {
  const email = EMAIL.exec(name.normalize('NFC'));
  if (!email) return name;
  const [, local = '', domain = ''] = email;
  const lowered = domain.toLowerCase();
  // domainToASCII applies IDNA (full-width letters, `。`); '' when it is no domain name.
  const ascii = domainToASCII(lowered) || lowered;
  return `${local.toLowerCase()}@${ascii.replace(/\.$/, '')}`;
}

/** Whether two names name the same principal. */
export function samePrincipal(a: string, b: string): boolean {
  return principalName(a) === principalName(b);
}

/** Whether `names` (a plan's approvers, forbidden approvers, voters) includes `name`. */
export function namesPrincipal(names: readonly string[], name: string): boolean {
  const wanted = principalName(name);
  return names.some((listed) => principalName(listed) === wanted);
}

/** The names, canonical and each once (in first-seen order). */
export function distinctPrincipals(names: readonly string[]): string[] {
  return [...new Set(names.map(principalName))];
}
