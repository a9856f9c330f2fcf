/**
 * The local stand-in for SES: each approval email is written as an `.eml` file (RFC 5322, one
 * multipart/alternative message with the same plain-text and HTML parts SES would send), so a
 * person opens it in any mail client or clicks the link in it. Nothing leaves the machine.
 *
 * Every message gets a file of its own, whole from the moment its name appears: it is written
 * under a temporary name (not `.eml`) in the same directory, then linked to its name, which
 * fails rather than replaces when the name is taken (another process's sink on the same
 * directory, in the same millisecond): the next number is tried.
 */
import { randomUUID } from 'node:crypto';
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { emailRecipients } from '../runtime/notify/email.ts';
import type { ApprovalMessage } from '../runtime/notify/message.ts';
import type { ApprovalNotice } from '../runtime/payloads/index.ts';

export const MAIL_SINK_SENDER = 'plangate@localhost';

/** This process's messages are numbered, so a burst for one approver in one millisecond never shares a name. */
let numbered = 0;

export class MailSink {
  constructor(private readonly dir: string) {}

  /** Writes one message per recipient; returns the files written. */
  async send(notice: ApprovalNotice, messageFor: (recipient: string) => ApprovalMessage): Promise<string[]> {
    await mkdir(this.dir, { recursive: true });
    const files: string[] = [];
    for (const recipient of emailRecipients(notice)) {
      files.push(await this.write(recipient, eml(recipient, messageFor(recipient))));
    }
    return files;
  }

  /** `<time>-<n>-<recipient>.eml`: time first, so names sort as the messages were sent. */
  private async write(recipient: string, content: string): Promise<string> {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const who = recipient.replace(/[^A-Za-z0-9@._-]/g, '_');
    const temporary = join(this.dir, `.${randomUUID()}.tmp`);
    await writeFile(temporary, content, { mode: 0o600, flag: 'wx' });
    try {
      for (;;) {
        const file = join(this.dir, `${stamp}-${numbered++}-${who}.eml`);
        try {
          await link(temporary, file);
          return file;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
      }
    } finally {
      await unlink(temporary);
    }
  }
}

/** One RFC 5322 message: headers, then the text and HTML parts, each base64 (any character survives). */
export function eml(recipient: string, message: ApprovalMessage, date = new Date()): string {
  const boundary = `plangate-${randomUUID()}`;
  const part = (type: string, body: string) =>
    [
      `--${boundary}`,
      `Content-Type: ${type}; charset=UTF-8`,
      'Content-Transfer-Encoding: base64',
      '',
      ...(Buffer.from(body, 'utf8')
        .toString('base64')
        .match(/.{1,76}/g) ?? []),
    ].join('\r\n');
  return [
    `From: plangate <${MAIL_SINK_SENDER}>`,
    `To: <${recipient}>`,
    `Subject: =?UTF-8?B?${Buffer.from(message.subject, 'utf8').toString('base64')}?=`,
    `Date: ${date.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${randomUUID()}@plangate.local>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    '',
    part('text/plain', message.text),
    part('text/html', message.html),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
