/**
 * Approval link ids: the opaque, HMAC-signed, expiring id a person gets instead of the task token.
 * Two kinds, one signer: the shared id `<approval>.<expiry>.<mac>` (Slack, the web; the approver
 * signs in and the API names them) and the recipient-bound id `<approval>.<expiry>.<recipient>.<mac>`
 * that one emailed approver gets: its MAC also covers the recipient, so answering through it names
 * that recipient (possession of the inbox).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { HarnessError } from '../shared/errors.ts';
import type { SupersededBy } from './gate-item.ts';

/** Why an answer was refused; nothing was changed. */
export class ApprovalError extends HarnessError {
  constructor(
    readonly reason:
      | 'malformed'
      | 'forged'
      | 'expired'
      | 'used'
      | 'not-found'
      | 'forbidden'
      | 'digest-mismatch'
      | 'invalid'
      | 'superseded',
    message: string,
  ) {
    super('ApprovalRefused', message);
  }
}

/** The gate was closed because a later version of its plan was gated: review that one instead. */
export class GateSupersededError extends ApprovalError {
  constructor(readonly supersededBy: SupersededBy) {
    super('superseded', `superseded by v${supersededBy.version}: review v${supersededBy.version} instead`);
  }
}

/**
 * Signs and checks approval link ids: HMAC-SHA256 over the approval id, its expiry and the plan
 * digest, plus the recipient for a recipient-bound id. Needs no table: the notifier derives each
 * recipient's id from the shared one it was given, after checking that one.
 */
export class LinkSigner {
  constructor(private readonly key: string | Buffer) {
    if (Buffer.byteLength(key) < 32) throw new Error('the approval signing key must be at least 32 bytes');
  }

  /** The shared id `<approval>.<expiry>.<mac>`. */
  shared(approvalId: string, expiresAtEpoch: number, planDigest: string): string {
    return `${approvalId}.${expiresAtEpoch}.${this.mac(`${approvalId}.${expiresAtEpoch}.${planDigest}`)}`;
  }

  /** The id only `recipient` answers through: `<approval>.<expiry>.<base64url recipient>.<mac>`. */
  bound(approvalId: string, expiresAtEpoch: number, planDigest: string, recipient: string): string {
    // A NUL separates the recipient part: a shared id's MAC input never holds one, so the two never collide.
    const mac = this.mac(`recipient\0${approvalId}.${expiresAtEpoch}.${planDigest}\0${recipient}`);
    return `${approvalId}.${expiresAtEpoch}.${Buffer.from(recipient).toString('base64url')}.${mac}`;
  }

  /**
   * Derives `recipient`'s own id from a shared id, which must verify for `planDigest` (a notice
   * that was not issued by the gate yields no link). Throws ApprovalError `forged` otherwise.
   */
  forRecipient(sharedLinkId: string, planDigest: string, recipient: string): string {
    const parsed = parseLinkId(sharedLinkId);
    if (parsed.recipient !== undefined || !this.verifies(parsed, planDigest))
      throw new ApprovalError('forged', 'this approval link is not valid');
    if (!recipient) throw new ApprovalError('invalid', 'a recipient-bound link needs a recipient');
    return this.bound(parsed.approvalId, parsed.expiresAtEpoch, planDigest, recipient);
  }

  /** Whether a parsed id's MAC is right for `planDigest` (constant time). */
  verifies(link: ParsedLinkId, planDigest: string): boolean {
    const expected =
      link.recipient === undefined
        ? this.shared(link.approvalId, link.expiresAtEpoch, planDigest)
        : this.bound(link.approvalId, link.expiresAtEpoch, planDigest, link.recipient);
    return safeEqual(expected, link.text);
  }

  private mac(message: string): string {
    return createHmac('sha256', this.key).update(message).digest('base64url');
  }
}

/** A link id's parts, not yet verified. */
export interface ParsedLinkId {
  readonly text: string;
  readonly approvalId: string;
  readonly expiresAtEpoch: number;
  readonly recipient?: string;
}

/** Splits a link id (shared or recipient-bound); throws ApprovalError `malformed` for anything else. */
export function parseLinkId(linkId: string): ParsedLinkId {
  const parts = linkId.split('.');
  const [approvalId, expiresText] = parts;
  const malformed = () => new ApprovalError('malformed', 'this approval link is malformed');
  if ((parts.length !== 3 && parts.length !== 4) || !approvalId || !/^\d{1,12}$/.test(expiresText ?? ''))
    throw malformed();
  if (parts.length === 3) return { text: linkId, approvalId, expiresAtEpoch: Number(expiresText) };
  const encoded = parts[2] as string;
  const recipient = Buffer.from(encoded, 'base64url').toString('utf8');
  // Only the canonical encoding of a non-empty name: one recipient has exactly one id.
  if (!recipient || Buffer.from(recipient).toString('base64url') !== encoded) throw malformed();
  return { text: linkId, approvalId, expiresAtEpoch: Number(expiresText), recipient };
}

/** The recipient a link id names, when it is recipient-bound (not verified: for display after `describe`). */
export function recipientOf(linkId: string): string | undefined {
  return parseLinkId(linkId).recipient;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
