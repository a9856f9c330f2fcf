/**
 * When a chain's head gets anchored: not per event (a signature and a durable write per step would
 * double the journal's cost) but in batches, per execution: at once at every gate and at the end
 * of a run (what an auditor most needs pinned), else once `maxEvents` events are unanchored or
 * `maxDelayMs` after the first of them. Only the latest head of each execution is signed; a later
 * anchor covers every event before it, since the head hash chains them all.
 */
import type { EventType, JournalRecord } from '../payloads/index.ts';
import { type AnchorDigest, type AnchorSigner, type ChainHeadRef, signAnchor } from './anchor-digest.ts';

/** Where signed digests go: an append-only log its writers cannot rewrite (a file locally, S3 Object Lock on AWS). */
export interface DigestSink {
  append(digests: readonly AnchorDigest[]): Promise<void>;
}

/** Events after which the head is anchored at once: gates asked and answered, and a run's end. */
export const ANCHOR_AT_ONCE: ReadonlySet<EventType> = new Set<EventType>([
  'GATE_APPROVAL_REQUESTED',
  'GATE_VOTE',
  'GATE_APPROVED',
  'GATE_REJECTED',
  'GATE_PLAN_MODIFIED',
  'GATE_CLARIFICATION_REQUESTED',
  'RECOVERY_ESCALATION',
  'HUMAN_TASK_ANSWERED',
  'EXECUTION_COMPLETE',
]);

export interface AnchorerProps {
  readonly signer: AnchorSigner;
  readonly sink: DigestSink;
  /** @default 50 */
  readonly maxEvents?: number;
  /** @default 5000 */
  readonly maxDelayMs?: number;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** Told when a batch could not be signed or written (the events stay unanchored until the next batch). */
  readonly onError?: (error: unknown) => void;
}

/** The journal's view of an anchorer: told of each stored event; must not throw. */
export interface JournalAnchor {
  observe(record: JournalRecord): void;
}

export class Anchorer implements JournalAnchor {
  /** Per execution: the newest stored head not yet anchored, and how many events it covers. */
  private readonly pending = new Map<string, { head: ChainHeadRef; events: number }>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly props: AnchorerProps) {}

  observe(record: JournalRecord): void {
    const previous = this.pending.get(record.executionId);
    // Appends of one execution may be observed out of order across processes' retries: keep the newest.
    if (previous && previous.head.seq > record.seq) return;
    const events = (previous?.events ?? 0) + 1;
    this.pending.set(record.executionId, {
      head: { executionId: record.executionId, seq: record.seq, hash: record.hash },
      events,
    });
    if (ANCHOR_AT_ONCE.has(record.event) || events >= (this.props.maxEvents ?? 50)) {
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.props.maxDelayMs ?? 5000);
      this.timer.unref();
    }
  }

  /** Anchors every pending head; resolves once they are written (or the write failed and was reported). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const heads = [...this.pending.values()].map((p) => p.head);
    this.pending.clear();
    if (heads.length === 0) return this.writing;
    this.writing = this.writing.then(async () => {
      try {
        const time = (this.props.clock ?? (() => new Date()))();
        const digests = await Promise.all(heads.map((head) => signAnchor(this.props.signer, head, time)));
        await this.props.sink.append(digests);
      } catch (error) {
        (this.props.onError ?? ((e) => process.stderr.write(`plangate: anchoring failed: ${String(e)}\n`)))(
          error,
        );
      }
    });
    return this.writing;
  }
}
