/**
 * Random bytes from the operating system's CSPRNG, drawn from a pool refilled 4 KiB at a time:
 * a task token or trace id per task call would otherwise cost one `randomFillSync` each.
 */
import { randomFillSync, randomUUID } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let used = POOL_BYTES;

/**
 * Where `n` (≤ 4096) fresh random bytes start in {@link pool}, each handed out once; read in place
 * (`toString` with a range) rather than through a `subarray` per call.
 */
function take(n: number): number {
  if (used + n > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const start = used;
  used += n;
  return start;
}

/** `n` random bytes as base64url text. */
export function randomBase64url(n: number): string {
  const start = take(n);
  return pool.toString('base64url', start, start + n);
}

/** `n` random bytes as hex text. */
export function randomHex(n: number): string {
  const start = take(n);
  return pool.toString('hex', start, start + n);
}

/** Request ids drawn from one random UUID: its first 32 characters, then a 4-hex-digit counter. */
const IDS_PER_PREFIX = 0x10000;
let idPrefix = '';
let idsLeft = 0;
const HEX_BYTES = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * A request id in the format of a random (version 4) UUID, unique in the process: 96 random bits
 * shared by 65,536 consecutive ids that a counter tells apart. A `randomUUID()` per task call
 * cost more than the rest of the id's uses together; nothing needs request ids to be unguessable
 * (they only name a call, as in Lambda's own logs).
 */
export function requestId(): string {
  if (idsLeft === 0) {
    idPrefix = randomUUID().slice(0, 32);
    idsLeft = IDS_PER_PREFIX;
  }
  const n = IDS_PER_PREFIX - idsLeft--;
  return `${idPrefix}${HEX_BYTES[n >> 8]}${HEX_BYTES[n & 255]}`;
}
