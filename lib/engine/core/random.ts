/**
 * Random bytes from the operating system's CSPRNG, drawn from a pool refilled 4 KiB at a time:
 * a task token or trace id per task call would otherwise cost one `randomFillSync` each.
 */
import { randomFillSync, randomUUID } from 'node:crypto';

const POOL_BYTES = 4096;

/** Request ids drawn from one random UUID: its first 32 characters, then a 4-hex-digit counter. */
const IDS_PER_PREFIX = 0x10000;
const HEX_BYTES: readonly string[] = Object.freeze(
  Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0')),
);

/** One owner's pool of random bytes (an engine's, a resource invoker's) and its request ids. */
export class RandomPool {
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private used = POOL_BYTES;
  private idPrefix = '';
  private idsLeft = 0;

  /** `n` random bytes as base64url text. */
  base64url(n: number): string {
    const start = this.take(n);
    return this.pool.toString('base64url', start, start + n);
  }

  /** `n` random bytes as hex text. */
  hex(n: number): string {
    const start = this.take(n);
    return this.pool.toString('hex', start, start + n);
  }

  /**
   * A request id in the format of a random (version 4) UUID, unique in the process: 96 random bits
   * shared by 65,536 consecutive ids that a counter tells apart. A `randomUUID()` per task call
   * cost more than the rest of the id's uses together; nothing needs request ids to be unguessable
   * (they only name a call, as in Lambda's own logs).
   */
  requestId(): string {
    if (this.idsLeft === 0) {
      this.idPrefix = randomUUID().slice(0, 32);
      this.idsLeft = IDS_PER_PREFIX;
    }
    const n = IDS_PER_PREFIX - this.idsLeft--;
    return `${this.idPrefix}${HEX_BYTES[n >> 8]}${HEX_BYTES[n & 255]}`;
  }

  /**
   * Where `n` (≤ 4096) fresh random bytes start in the pool, each handed out once; read in place
   * (`toString` with a range) rather than through a `subarray` per call.
   */
  private take(n: number): number {
    if (this.used + n > POOL_BYTES) {
      randomFillSync(this.pool);
      this.used = 0;
    }
    const start = this.used;
    this.used += n;
    return start;
  }
}
