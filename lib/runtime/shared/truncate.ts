/** Size limits for captured output: evidence and events stay small enough for DynamoDB (400 KB items) and EventBridge (256 KB). */

/** Default cap on captured stdout/stderr/body, in bytes. */
export const DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024;

/** Default cap on an evidence excerpt, in bytes. */
export const DEFAULT_EXCERPT_BYTES = 2 * 1024;

/** Appended when text was cut, so a reader never mistakes a prefix for the whole. */
export const truncationMarker = (droppedBytes: number): string => `\n…[truncated ${droppedBytes} bytes]`;

/** Keeps the first `maxBytes` bytes of `text` (never splitting a UTF-8 character) and marks the cut. */
export function truncateText(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return {
    text: bytes.subarray(0, end).toString('utf8') + truncationMarker(bytes.length - end),
    truncated: true,
  };
}

/** Keeps the last `maxBytes` bytes of `text` (never splitting a UTF-8 character) and marks the cut before them. */
export function truncateStart(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let start = bytes.length - maxBytes;
  // Step forward over UTF-8 continuation bytes so the cut lands on a character boundary.
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return `…[${start} bytes before]\n${bytes.subarray(start).toString('utf8')}`;
}

/** Collects a stream's chunks up to `maxBytes`, counting (not keeping) the rest. */
export class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    const room = this.maxBytes - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  toString(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped > 0 ? text + truncationMarker(this.dropped) : text;
  }
}

/**
 * `text` in at most `maxChars` characters for a person to read: when it must be cut, it is cut
 * after the last whole word that fits and ends with "…" (never mid-word, never mid-token).
 */
export function shortenAtWord(text: string, maxChars: number): string {
  const chars = [...text];
  if (chars.length <= maxChars) return text;
  const room = maxChars - 1; // the "…" takes one
  const head = chars.slice(0, room).join('');
  // The cut falls inside a word unless the next character is a space: drop that word's start.
  const whole = /\s/.test(chars[room] ?? '') ? head : head.replace(/\S+$/u, '');
  const words = whole.replace(/[\s,;:.-]+$/u, '');
  // One word longer than the room has no boundary to keep: it is cut inside.
  return `${words === '' ? head : words}…`;
}
