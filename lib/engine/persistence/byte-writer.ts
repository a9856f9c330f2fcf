import * as fs from 'node:fs';

/** `fs.writeSync` with a buffer: what a store writes its log with. */
export type WriteSync = (
  fd: number,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number | null,
) => number;

/**
 * Builds a line of bytes in place: numbers as ASCII digits and texts as UTF-8, straight into one
 * growing buffer that is written to the file as it is, so encoding a history line makes no
 * intermediate strings (no rope of small strings to flatten and convert at write time).
 */
export class ByteWriter {
  private buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  /** Bytes written so far. */
  length = 0;

  /** Starts a new line. */
  reset(): void {
    this.length = 0;
  }

  /** The bytes written since {@link reset}: valid until the writer is used again. */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }

  /**
   * Writes the bytes written since {@link reset} to a file at its current position (all of them:
   * a regular file may take fewer per call), with `writeSync` (tests inject failures there).
   */
  writeTo(fd: number, writeSync: WriteSync = fs.writeSync): void {
    let done = 0;
    while (done < this.length) done += writeSync(fd, this.buf, done, this.length - done, null);
  }

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }

  /** One ASCII character by code. */
  byte(c: number): void {
    this.room(1);
    this.buf[this.length++] = c;
  }

  /** A JSON number: integers digit by digit, anything else as JSON writes it. */
  number(n: number): void {
    if (!Number.isSafeInteger(n)) {
      this.text(JSON.stringify(n));
      return;
    }
    this.room(17);
    const buf = this.buf;
    if (n < 0) {
      buf[this.length++] = 45;
      n = -n;
    }
    if (n < 10) {
      buf[this.length++] = 48 + n;
      return;
    }
    if (n < 10000) {
      // the common case (ids, deltas, indices): small integer arithmetic, no digit count loop
      let at = this.length;
      if (n >= 1000) {
        const d = (n / 1000) | 0;
        buf[at++] = 48 + d;
        n -= d * 1000;
        buf[at++] = 48 + ((n / 100) | 0);
        n %= 100;
        buf[at++] = 48 + ((n / 10) | 0);
      } else if (n >= 100) {
        const d = (n / 100) | 0;
        buf[at++] = 48 + d;
        n -= d * 100;
        buf[at++] = 48 + ((n / 10) | 0);
      } else if (n >= 10) buf[at++] = 48 + ((n / 10) | 0);
      buf[at++] = 48 + (n % 10);
      this.length = at;
      return;
    }
    let digits = 1;
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
    let at = this.length + digits;
    this.length = at;
    while (n >= 10) {
      const rest = Math.floor(n / 10);
      buf[--at] = 48 + (n - rest * 10);
      n = rest;
    }
    buf[--at] = 48 + n;
  }

  /** Bytes prepared before (e.g. a quoted name). */
  raw(bytes: Uint8Array): void {
    const n = bytes.length;
    this.room(n);
    const buf = this.buf;
    let at = this.length;
    if (n < 32) for (let i = 0; i < n; i++) buf[at++] = bytes[i] as number;
    else {
      buf.set(bytes, at);
      at += n;
    }
    this.length = at;
  }

  /** A text as UTF-8 (already JSON where it must be). */
  text(text: string): void {
    const n = text.length;
    this.room(n * 3);
    if (n < 32) {
      // short texts (names, small payloads) byte by byte: cheaper than a call into Buffer#write
      const buf = this.buf;
      let at = this.length;
      for (let i = 0; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) {
          this.length = at;
          this.length += buf.write(text.slice(i), at, 'utf8');
          return;
        }
        buf[at++] = c;
      }
      this.length = at;
      return;
    }
    this.length += this.buf.write(text, this.length, 'utf8');
  }
}
