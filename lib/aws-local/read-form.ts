import type { IncomingMessage } from 'node:http';

/** The most a local page's form may carry: answers and sign-ins are a few hundred bytes. */
const MAX_FORM_BYTES = 16 * 1024;

/** A posted `application/x-www-form-urlencoded` body, or undefined when it is too large to read. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
