/**
 * What a run says about its agent steps' workers: when a step is queued for a worker of its
 * target, and, while no worker has taken it, how long it has waited (instead of silence until
 * the step times out). Whether a worker took it is read from the execution's history (a worker's
 * GetActivityTask records ActivityStarted after the step's ActivityScheduled).
 */
import { GetExecutionHistoryCommand, type HistoryEvent, type SFNClient } from '@aws-sdk/client-sfn';
import { runsOnWorker } from '../plan/agent-steps.ts';
import type { Plan } from '../plan/schema.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';

/** First "waits for a worker" notice after this long (scaled like the run's waits), then again every {@link REPEAT_MS}. */
const FIRST_NOTICE_MS = 30_000;
const REPEAT_MS = 60_000;
/** However small the time scale, notices come at most once a second. */
const MIN_NOTICE_MS = 1_000;

export interface WorkerWatchProps {
  readonly sfn: SFNClient;
  readonly executionArn: string;
  readonly plan: Plan;
  /** The run's time scale: the wait before a notice scales with the step's own timeout. */
  readonly timeScale: number;
  /** The run's workers take agent steps (false: `plangate worker` processes do). */
  readonly inProcess: boolean;
  /** How to start a worker of `target`, for the notices. */
  readonly workerCommand: (target: string) => string;
  readonly say: (line: string) => void;
}

interface Waiting {
  readonly target: string;
  readonly attempt: number;
  /** When the step started (its TASK_STARTED), ms since the epoch. */
  readonly since: number;
  nextNoticeAt: number;
}

export class WorkerWatch {
  private readonly waiting = new Map<string, Waiting>();
  private readonly targets: ReadonlyMap<string, string>;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly props: WorkerWatchProps) {
    this.targets = new Map(
      props.plan.steps.filter(runsOnWorker).map((step) => [step.id, step.target as string]),
    );
  }

  /** Follows the journal: an agent step's TASK_STARTED queues it; its outcome ends the wait. */
  onEvent(event: JournalRecord): void {
    if (event.event === 'EXECUTION_COMPLETE') {
      this.waiting.clear();
      return;
    }
    const target = event.task_id ? this.targets.get(event.task_id) : undefined;
    if (!target || !event.task_id) return;
    if (event.event === 'TASK_STARTED') {
      const attempt = Number(event.details.attempt ?? 1);
      const since = Date.parse(event.timestamp);
      this.waiting.set(event.task_id, {
        target,
        attempt,
        since,
        nextNoticeAt: since + this.scaled(FIRST_NOTICE_MS),
      });
      if (!this.props.inProcess)
        this.props.say(
          `▶ ${event.task_id} (attempt ${attempt}) is queued for a "${target}" worker (${this.props.workerCommand(target)})`,
        );
    } else if (ENDS_A_WAIT.has(event.event)) this.waiting.delete(event.task_id);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.check(), MIN_NOTICE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private scaled(ms: number): number {
    return Math.max(MIN_NOTICE_MS, ms * this.props.timeScale);
  }

  /** Says, for each step due a notice, how long it has waited; forgets the ones a worker took. */
  private async check(): Promise<void> {
    const now = Date.now();
    const due = [...this.waiting].filter(([, wait]) => now >= wait.nextNoticeAt);
    if (due.length === 0 || this.checking) return;
    this.checking = true;
    try {
      const queued = await this.queuedActivities();
      for (const [stepId, wait] of due) {
        if (this.waiting.get(stepId) !== wait) continue;
        const state = queued.get(`${stepId}#${wait.attempt}`);
        // Not queued yet (still starting), or a worker has it: its heartbeats watch it from now on.
        if (state === undefined) continue;
        if (state === 'taken') {
          this.waiting.delete(stepId);
          continue;
        }
        wait.nextNoticeAt = now + this.scaled(REPEAT_MS);
        const seconds = Math.round((now - wait.since) / 1000);
        const timeout = state.timeoutSeconds
          ? ` (it times out ${Math.round(state.timeoutSeconds * this.props.timeScale)} s after it was queued)`
          : '';
        this.props.say(
          this.props.inProcess
            ? `⏳ ${stepId} (attempt ${wait.attempt}) waits for a "${wait.target}" worker: none has taken it for ${seconds} s; the run's own "${wait.target}" workers are all busy${timeout}.`
            : `⏳ ${stepId} (attempt ${wait.attempt}) waits for a "${wait.target}" worker: none has taken it for ${seconds} s${timeout}. Is one running? ${this.props.workerCommand(wait.target)}`,
        );
      }
    } catch {
      // The history could not be read (the run is ending): the next tick tries again.
    } finally {
      this.checking = false;
    }
  }

  /**
   * Every agent step attempt queued in the history, by `<step>#<attempt>`: `taken` once a worker
   * took it, else how long it may wait.
   */
  private async queuedActivities(): Promise<Map<string, 'taken' | { timeoutSeconds?: number }>> {
    const events: HistoryEvent[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.props.sfn.send(
        new GetExecutionHistoryCommand({
          executionArn: this.props.executionArn,
          maxResults: 1000,
          includeExecutionData: true,
          ...(nextToken ? { nextToken } : {}),
        }),
      );
      events.push(...(page.events ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
    const started = new Set(events.filter((e) => e.type === 'ActivityStarted').map((e) => e.previousEventId));
    const queued = new Map<string, 'taken' | { timeoutSeconds?: number }>();
    for (const event of events) {
      if (event.type !== 'ActivityScheduled') continue;
      const details = event.activityScheduledEventDetails;
      const input = parseHandoff(details?.input);
      if (!input) continue;
      queued.set(
        `${input.stepId}#${input.attempt}`,
        started.has(event.id)
          ? 'taken'
          : details?.timeoutInSeconds !== undefined
            ? { timeoutSeconds: details.timeoutInSeconds }
            : {},
      );
    }
    return queued;
  }
}

/** What ends a step's wait for a worker (its outcome, or not running at all). */
const ENDS_A_WAIT: ReadonlySet<string> = new Set([
  'TASK_COMPLETED',
  'TASK_FAILED',
  'TASK_SKIPPED',
  'TASK_BLOCKED',
]);

function parseHandoff(text: string | undefined): { stepId: string; attempt: number } | undefined {
  try {
    const parsed = JSON.parse(text ?? '') as { stepId?: unknown; attempt?: unknown };
    return typeof parsed.stepId === 'string' && typeof parsed.attempt === 'number'
      ? { stepId: parsed.stepId, attempt: parsed.attempt }
      : undefined;
  } catch {
    return undefined;
  }
}
