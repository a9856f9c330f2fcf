/**
 * Writes the execution files to disk: all at once (`plangate files`), or as events arrive
 * (`plangate run`), where each log entry is appended and flushed on its own so `tail -f` works
 * and every other file is rewritten when its projection changes.
 */
import { appendFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Plan } from '../plan/schema.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { executionFiles, logEntry, taskDir } from './execution-files.ts';

/** Replaces `dir` with the files of these events. */
export async function writeExecutionFiles(
  dir: string,
  plan: Plan,
  events: readonly JournalRecord[],
): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  for (const [path, content] of executionFiles(plan, events)) await put(join(dir, path), content);
}

export class ExecutionFilesWriter {
  private readonly events: JournalRecord[] = [];
  private readonly written = new Map<string, string>();
  private started = false;

  constructor(
    private readonly dir: string,
    private readonly plan: Plan,
  ) {}

  /** Takes the next event (in sequence order) and brings the files up to date. */
  async add(event: JournalRecord): Promise<void> {
    if (!this.started) {
      // The files are a projection: whatever a previous session (or a person) left is replaced.
      await rm(this.dir, { recursive: true, force: true });
      this.started = true;
    }
    this.events.push(event);
    if (event.task_id && this.plan.steps.some((s) => s.id === event.task_id)) {
      const log = join(this.dir, taskDir(this.plan, event.task_id), 'execution.log');
      await mkdir(dirname(log), { recursive: true });
      await appendFile(log, logEntry(this.plan, event), { flush: true });
    }
    const changed = new Set(event.task_id ? [event.task_id] : []);
    for (const [path, content] of executionFiles(this.plan, this.events, changed)) {
      if (path.endsWith('/execution.log') || this.written.get(path) === content) continue;
      await put(join(this.dir, path), content);
      this.written.set(path, content);
    }
  }
}

async function put(file: string, content: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, content);
}
