/**
 * Progress lines with a spinner and elapsed time under them for steps still running, only on a
 * TTY. Without a TTY lines are written as they come and nothing is redrawn.
 */
import type { RunningStep } from './progress.ts';
import { seconds } from './progress.ts';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Steps running longer than this get the spinner line. */
const LONG_STEP_MS = 1000;

export class Spinner {
  private running: RunningStep[] = [];
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private drawn = false;

  private readonly tty: NodeJS.WritableStream | undefined;

  /** Redraws only when `interactive` (a TTY); otherwise writes plain lines. */
  constructor(
    private readonly out: NodeJS.WritableStream,
    interactive: boolean,
  ) {
    this.tty = interactive ? out : undefined;
  }

  print(lines: readonly string[]): void {
    this.clear();
    for (const line of lines) this.out.write(`${line}\n`);
    this.draw();
  }

  update(running: RunningStep[]): void {
    this.running = running;
    if (!this.tty) return;
    if (running.length > 0 && !this.timer) {
      this.timer = setInterval(() => {
        this.clear();
        this.draw();
      }, 100);
      this.timer.unref();
    } else if (running.length === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.clear();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }

  private draw(): void {
    const now = Date.now();
    const long = this.running.filter((r) => now - r.since >= LONG_STEP_MS);
    if (!this.tty || long.length === 0) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    const text = long.map((r) => `${r.label} (${seconds(now - r.since)})`).join('  ');
    this.tty.write(`${FRAMES[this.frame]} ${text}`);
    this.drawn = true;
  }

  private clear(): void {
    if (this.tty && this.drawn) this.tty.write('\r\x1b[2K');
    this.drawn = false;
  }
}
