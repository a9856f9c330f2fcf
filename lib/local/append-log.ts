/**
 * An append-only text file kept open for the life of the local stack, with group writes: what is
 * appended while a write is in flight goes out together in the next one. Each `append` resolves
 * once its text has been handed to the operating system (write(2), in order), which is what
 * `fs.appendFile` promised per call; opening and closing the file for every line was most of the
 * local bus's cost per event.
 */
import { type FileHandle, open } from 'node:fs/promises';

export class AppendLog {
  private handle: Promise<FileHandle> | undefined;
  /** Text waiting for the next write, and who waits for it. */
  private batch: Batch | undefined;
  /** The write in flight, if any. */
  private writing: Promise<void> | undefined;
  private closed = false;

  constructor(readonly path: string) {}

  /** Appends `text`; resolves when it is written, after everything appended before it. */
  append(text: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`${this.path} is closed`));
    this.batch ??= newBatch();
    this.batch.text.push(text);
    const { written } = this.batch;
    this.writing ??= this.writeBatches();
    return written;
  }

  /** Writes what is pending and closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.writing;
    const handle = this.handle;
    this.handle = undefined;
    if (handle) await (await handle).close();
  }

  private async writeBatches(): Promise<void> {
    while (this.batch) {
      const batch = this.batch;
      this.batch = undefined;
      try {
        this.handle ??= open(this.path, 'a');
        // FileHandle.write may write part of a large buffer: writeFile on a handle opened for
        // appending writes all of it, at the end.
        await (await this.handle).writeFile(batch.text.join(''));
        batch.resolve();
      } catch (error) {
        // The next batch opens the file again.
        const failed = this.handle;
        this.handle = undefined;
        void failed?.then((handle) => handle.close()).catch(() => {});
        batch.reject(error);
      }
    }
    this.writing = undefined;
  }
}

interface Batch {
  readonly text: string[];
  readonly written: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

function newBatch(): Batch {
  let resolve: () => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const written = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { text: [], written, resolve, reject };
}
