/**
 * Follows one execution's journal in sequence order: what is already stored first (a re-attach
 * after a crash shows the run so far), then what the event bus publishes. Bus deliveries can
 * arrive out of order (parallel branches publish concurrently) or not at all (a refused put),
 * so a gap is filled from the table, which is the source of truth.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LocalEventBus } from '../aws-local/eventbus.ts';
import { EVENT_SOURCE, readEvents } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';

export interface EventFollowerProps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly eventsTable: string;
  readonly bus: LocalEventBus;
  readonly executionId: string;
  /** Called once per event, in sequence order. */
  readonly onEvent: (event: JournalRecord) => void | Promise<void>;
  /** How long a gap may stay open before the table is read. @default 300 ms */
  readonly gapWaitMs?: number;
}

export class EventFollower {
  private next = 1;
  private readonly early = new Map<number, JournalRecord>();
  private unsubscribe: (() => void) | undefined;
  private gapTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly props: EventFollowerProps) {}

  /** Delivers what is stored, then follows the bus. */
  async start(): Promise<void> {
    this.unsubscribe = this.props.bus.subscribe({ source: [EVENT_SOURCE] }, (busEvent) => {
      const record = busEvent.detail as JournalRecord;
      if (record?.executionId !== this.props.executionId || typeof record.seq !== 'number') return;
      this.enqueue(() => this.accept([record]));
    });
    await this.catchUp();
  }

  /** Reads the table and delivers anything not yet delivered. */
  catchUp(): Promise<void> {
    return this.enqueue(async () => {
      const stored = await readEvents(this.props.dynamo, this.props.eventsTable, this.props.executionId);
      await this.accept(stored.filter((e) => e.seq >= this.next));
    });
  }

  /** Waits for deliveries in progress. */
  settled(): Promise<void> {
    return this.chain;
  }

  stop(): void {
    this.unsubscribe?.();
    if (this.gapTimer) clearTimeout(this.gapTimer);
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const run = this.chain.then(work);
    this.chain = run.catch(() => {});
    return run;
  }

  private async accept(records: readonly JournalRecord[]): Promise<void> {
    for (const r of records) if (r.seq >= this.next) this.early.set(r.seq, r);
    for (let r = this.early.get(this.next); r; r = this.early.get(this.next)) {
      this.early.delete(this.next);
      this.next++;
      await this.props.onEvent(r);
    }
    if (this.early.size > 0 && !this.gapTimer) {
      this.gapTimer = setTimeout(() => {
        this.gapTimer = undefined;
        this.catchUp().catch(() => {});
      }, this.props.gapWaitMs ?? 300);
    }
  }
}
