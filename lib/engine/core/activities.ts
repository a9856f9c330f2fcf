/**
 * Activity tasks waiting for workers, and workers waiting for tasks (GetActivityTask's long poll).
 * Nothing here is written anywhere: a queued task is an execution whose history ends in
 * ActivityScheduled, so a restarted engine queues it again when it replays that execution.
 */
import { SfnServiceError } from '../types.ts';

/** A scheduled activity task, as its execution hands it to the queue. */
export interface ActivityTask {
  /** The task input (JSON text), as GetActivityTask returns it. */
  readonly input: string;
  /**
   * Gives the task to a worker: the execution records ActivityStarted, starts waiting for the
   * outcome and returns the task token. Called at most once.
   */
  start(workerName: string | undefined): string;
}

/** What a worker's GetActivityTask gets: nothing when no task came within the poll. */
export type Delivery = { readonly taskToken: string; readonly input: string } | undefined;

/** AWS's quota of concurrent GetActivityTask polls per activity. */
const MAX_POLLERS = 1000;

interface Poller {
  deliver(task: ActivityTask): void;
  end(): void;
}

export class ActivityQueues {
  /** Tasks nobody has taken yet, by activity ARN, oldest first. */
  private readonly queued = new Map<string, ActivityTask[]>();
  /** Workers polling, by activity ARN, longest waiting first. */
  private readonly pollers = new Map<string, Poller[]>();
  /** The engine is closing: no poll is taken any more. */
  private closed = false;

  /** Queues a task or hands it straight to a waiting worker; returns a function that withdraws it if still queued. */
  enqueue(activityArn: string, task: ActivityTask): () => void {
    const poller = this.pollers.get(activityArn)?.shift();
    if (poller) {
      poller.deliver(task);
      return () => {};
    }
    const list = this.queued.get(activityArn) ?? [];
    list.push(task);
    this.queued.set(activityArn, list);
    return () => {
      const at = list.indexOf(task);
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0 && this.queued.get(activityArn) === list) this.queued.delete(activityArn);
    };
  }

  /**
   * The oldest queued task, else the first one scheduled within `waitMs`, else nothing. A poll
   * whose `signal` aborts (its worker hung up) ends with nothing and takes no task: a task is
   * delivered to exactly one worker that is still there to receive it.
   */
  poll(
    activityArn: string,
    workerName: string | undefined,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<Delivery> {
    if (this.closed) throw new SfnServiceError('ServiceUnavailable', 'The engine is shutting down', 503);
    if (signal?.aborted) return Promise.resolve(undefined);
    const list = this.queued.get(activityArn);
    const task = list?.shift();
    if (list?.length === 0) this.queued.delete(activityArn);
    if (task) return Promise.resolve({ taskToken: task.start(workerName), input: task.input });
    const waiting = this.pollers.get(activityArn) ?? [];
    if (waiting.length >= MAX_POLLERS) {
      throw new SfnServiceError(
        'ActivityWorkerLimitExceeded',
        'The maximum number of workers concurrently polling for activity tasks has been reached.',
      );
    }
    this.pollers.set(activityArn, waiting);
    return new Promise((resolve) => {
      const finish = (delivery: Delivery) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', end);
        const at = waiting.indexOf(poller);
        if (at >= 0) waiting.splice(at, 1);
        if (waiting.length === 0 && this.pollers.get(activityArn) === waiting)
          this.pollers.delete(activityArn);
        resolve(delivery);
      };
      const end = () => finish(undefined);
      const poller: Poller = {
        deliver: (delivered) => finish({ taskToken: delivered.start(workerName), input: delivered.input }),
        end,
      };
      const timer = setTimeout(end, waitMs);
      signal?.addEventListener('abort', end, { once: true });
      waiting.push(poller);
    });
  }

  /** Ends every poll with nothing and refuses new ones (the engine closes). */
  close(): void {
    this.closed = true;
    for (const waiting of [...this.pollers.values()]) for (const p of [...waiting]) p.end();
  }
}
