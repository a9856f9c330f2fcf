/**
 * Approval requests by email through Amazon SES v2 (an injected SESv2Client): one email per
 * recipient, since each may carry that recipient's own link.
 */
import { type SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { namesPrincipal } from '../../plan/principal-names.ts';
import type { ApprovalNotice } from '../payloads/index.ts';
import type { ApprovalMessage } from './message.ts';

export interface EmailNotifierProps {
  readonly ses: SESv2Client;
  /** A verified SES identity, e.g. `plangate@example.com`. */
  readonly from: string;
  /**
   * Who else is told, besides the plan's approvers that are email addresses.
   * @default - only the approvers
   */
  readonly alwaysTo?: readonly string[];
}

const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

/** The approvers that are email addresses, plus `alwaysTo`; forbidden approvers are never told. */
export function emailRecipients(notice: ApprovalNotice, alwaysTo: readonly string[] = []): string[] {
  const all = [...notice.policy.approvers, ...alwaysTo];
  return [
    ...new Set(all.filter((a) => EMAIL.test(a) && !namesPrincipal(notice.policy.forbiddenApprovers, a))),
  ];
}

export class EmailNotifier {
  constructor(private readonly props: EmailNotifierProps) {}

  recipients(notice: ApprovalNotice): string[] {
    return emailRecipients(notice, this.props.alwaysTo);
  }

  /**
   * Sends each recipient its message; returns how many it went to (0: nobody to tell). Every
   * recipient is tried; if any send failed, the first error is thrown after the others went out.
   */
  async send(notice: ApprovalNotice, messageFor: (recipient: string) => ApprovalMessage): Promise<number> {
    const to = this.recipients(notice);
    const sent = await Promise.allSettled(
      to.map((recipient) => this.sendOne(recipient, messageFor(recipient))),
    );
    const failed = sent.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return to.length;
  }

  private async sendOne(recipient: string, message: ApprovalMessage): Promise<void> {
    await this.props.ses.send(
      new SendEmailCommand({
        FromEmailAddress: this.props.from,
        Destination: { ToAddresses: [recipient] },
        Content: {
          Simple: {
            Subject: { Data: message.subject, Charset: 'UTF-8' },
            Body: {
              Text: { Data: message.text, Charset: 'UTF-8' },
              Html: { Data: message.html, Charset: 'UTF-8' },
            },
          },
        },
      }),
    );
  }
}
