/**
 * Random bytes from the operating system's CSPRNG, drawn from a pool refilled 4 KiB at a time:
 * a task token or trace id per task call would otherwise cost one `randomFillSync` each.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let used = POOL_BYTES;

/** `n` (≤ 4096) fresh random bytes, each handed out once. */
function take(n: number): Buffer {
  if (used + n > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const bytes = pool.subarray(used, used + n);
  used += n;
  return bytes;
}

/** `n` random bytes as base64url text. */
export function randomBase64url(n: number): string {
  return take(n).toString('base64url');
}

/** `n` random bytes as hex text. */
export function randomHex(n: number): string {
  return take(n).toString('hex');
}
