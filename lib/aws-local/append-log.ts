/**
 * An append-only file kept open for the life of the local stack and written synchronously:
 * `append` returns once the operating system has the bytes (write(2), in call order), which is
 * what `fs.appendFile` promised per call. Opening and closing the file for every line was most of
 * the local bus's cost per event, and a synchronous write of a few hundred bytes costs less than
 * handing it to the libuv thread pool and back.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

export class AppendLog {
  private fd: number | undefined;
  private closed = false;

  constructor(readonly path: string) {}

  append(data: string | Buffer): void {
    if (this.closed) throw new Error(`${this.path} is closed`);
    this.fd ??= openSync(this.path, 'a');
    writeFully(this.fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }

  close(): void {
    this.closed = true;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** write(2) until all of `buffer` is written (a write may take part of it). */
export function writeFully(fd: number, buffer: Buffer): void {
  let written = 0;
  while (written < buffer.length) written += writeSync(fd, buffer, written, buffer.length - written);
}
