/**
 * Questions in the terminal, one at a time, any of which can be withdrawn when the approval
 * page answered first. Reads lines from stdin (a TTY or a pipe, so scripts and tests can answer).
 */
import { createInterface, type Interface } from 'node:readline';

export interface Question<T> {
  /** Shown before reading; repeated with the problem after an invalid answer. */
  readonly text: string;
  /** The answer, or a string saying what is wrong with the line. */
  readonly parse: (line: string) => T | string;
}

export interface Asked<T> {
  /** Resolves with the answer; undefined when withdrawn or stdin ended. */
  readonly answer: Promise<T | undefined>;
  /** Stops waiting for this answer, printing `note`. */
  withdraw(note: string): void;
}

interface Waiting {
  readonly question: Question<unknown>;
  readonly resolve: (value: unknown) => void;
  active: boolean;
}

export class TerminalPrompter {
  private readline: Interface | undefined;
  private readonly queue: Waiting[] = [];
  private ended = false;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
  ) {}

  ask<T>(question: Question<T>): Asked<T> {
    let entry: Waiting | undefined;
    const answer = new Promise<T | undefined>((resolve) => {
      entry = {
        question: question as Question<unknown>,
        resolve: resolve as (v: unknown) => void,
        active: true,
      };
    });
    const waiting = entry as unknown as Waiting;
    if (this.ended) waiting.resolve(undefined);
    else {
      this.queue.push(waiting);
      this.open();
      if (this.queue[0] === waiting) this.show(waiting);
    }
    return {
      answer,
      withdraw: (note) => {
        if (!waiting.active) return;
        const wasCurrent = this.queue[0] === waiting;
        this.finish(waiting, undefined);
        this.output.write(`${note}\n`);
        if (wasCurrent && this.queue[0]) this.show(this.queue[0]);
      },
    };
  }

  /** Stops reading stdin (so the process can exit). */
  close(): void {
    this.readline?.close();
    this.readline = undefined;
    // A pipe left open by the caller must not keep the process alive once the run is over.
    const stream = this.input as { pause?: () => void; unref?: () => void };
    stream.pause?.();
    stream.unref?.();
  }

  private open(): void {
    if (this.readline) {
      this.readline.resume();
      return;
    }
    this.readline = createInterface({ input: this.input, terminal: false });
    this.readline.on('line', (line) => this.onLine(line));
    this.readline.on('close', () => {
      if (this.readline === undefined) return;
      this.ended = true;
      for (const w of [...this.queue]) this.finish(w, undefined);
    });
  }

  private onLine(line: string): void {
    const current = this.queue[0];
    if (!current || line.trim() === '') return;
    const parsed = current.question.parse(line);
    if (typeof parsed === 'string') {
      this.output.write(`${parsed}\n> `);
      return;
    }
    this.finish(current, parsed);
    if (this.queue[0]) this.show(this.queue[0]);
  }

  private show(waiting: Waiting): void {
    this.output.write(`${waiting.question.text}\n> `);
  }

  private finish(waiting: Waiting, value: unknown): void {
    waiting.active = false;
    const index = this.queue.indexOf(waiting);
    if (index >= 0) this.queue.splice(index, 1);
    waiting.resolve(value);
    if (this.queue.length === 0) this.readline?.pause();
  }
}
