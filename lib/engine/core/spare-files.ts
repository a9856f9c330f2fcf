/**
 * Empty files created ahead of need by a helper thread. Creating a file (a new inode and a
 * directory entry) is the slowest step of starting a durable execution on many file systems,
 * hundreds of µs; here a new history instead opens a spare that already exists (a cheap open: no
 * new inode) and gives it its name with one `link(2)`. The helper thread works while the engine
 * runs (it needs no turn of the event loop) and hands over spares by number through shared
 * memory. It keeps no file open: Node closes the descriptors a worker opened when the worker
 * exits, which would pull them from under the histories writing to them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

/** Spares kept ready. */
const SLOTS = 4;
/** Slot states in the shared array (state, unused, seq per slot). */
const EMPTY = 0;
const READY = 1;
const STOP = 2;

/** The helper thread: fills every empty slot with a new empty file, waits while slots are full. */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const { slots, dir, prefix, count } = workerData;
let seq = 0;
for (;;) {
  for (let i = 0; i < count; i++) {
    const at = i * 3;
    while (Atomics.load(slots, at) === ${READY}) Atomics.wait(slots, at, ${READY});
    if (Atomics.load(slots, at) === ${STOP}) process.exit(0);
    const file = path.join(dir, prefix + '-' + seq + '.jsonl');
    try {
      fs.closeSync(fs.openSync(file, 'a+'));
    } catch {
      process.exit(0);
    }
    slots[at + 2] = seq++;
    if (Atomics.compareExchange(slots, at, ${EMPTY}, ${READY}) !== ${EMPTY}) {
      fs.rmSync(file, { force: true });
      process.exit(0);
    }
  }
}
`;

let instances = 0;

/** Readonly props of {@link SpareFiles}. */
export interface SpareFilesProps {
  /** Where spares wait; on the same file system as the histories (a link cannot cross it). */
  readonly dir: string;
}

export class SpareFiles {
  private readonly dir: string;
  private readonly prefix = `${process.pid}-${instances++}`;
  private readonly slots = new Int32Array(new SharedArrayBuffer(SLOTS * 3 * 4));
  private worker: Worker | undefined;
  private next = 0;
  private closed = false;

  constructor(props: SpareFilesProps) {
    this.dir = props.dir;
  }

  /** Starts the helper thread (a store calls this once it has made a few histories). */
  start(): void {
    if (this.worker || this.closed) return;
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { slots: this.slots, dir: this.dir, prefix: this.prefix, count: SLOTS },
    });
    this.worker.unref();
    this.worker.on('error', () => undefined); // no spares: histories are created directly
  }

  /**
   * Gives `file` (which must not exist) an empty file open for appending; undefined when no spare
   * is ready or `file` exists (link(2) never replaces a file).
   */
  take(file: string): number | undefined {
    const at = this.next * 3;
    if (Atomics.load(this.slots, at) !== READY) return undefined;
    const spare = path.join(this.dir, `${this.prefix}-${this.slots[at + 2]}.jsonl`);
    let fd: number;
    try {
      fd = fs.openSync(spare, 'a+');
    } catch {
      return undefined; // gone (removed from outside): the history is created directly
    }
    try {
      fs.linkSync(spare, file);
    } catch {
      fs.closeSync(fd);
      return undefined; // the spare stays for the next history
    }
    Atomics.store(this.slots, at, EMPTY);
    Atomics.notify(this.slots, at);
    this.next = (this.next + 1) % SLOTS;
    // only a second name goes; queued to the thread pool, nothing waits for it
    fs.unlink(spare, () => undefined);
    return fd;
  }

  /** Stops the helper thread and removes the spares it made. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (let i = 0; i < SLOTS; i++) {
      const at = i * 3;
      if (Atomics.exchange(this.slots, at, STOP) === READY) {
        fs.rmSync(path.join(this.dir, `${this.prefix}-${this.slots[at + 2]}.jsonl`), { force: true });
      }
      Atomics.notify(this.slots, at);
    }
  }
}
