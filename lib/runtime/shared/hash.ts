/** SHA-256 as hex: the journal's hash chain and stored outputs' checksums. */
import { createHash } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
