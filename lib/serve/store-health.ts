/**
 * Whether the store of `plangate serve` can be written, for its API's 503s: the engine's own fault
 * (its write-ahead log refused a write) or, after a request failed, a probe write in the store
 * (the journal's DynamoDB, the keys and files beside it). While a fault lasts it is retried every
 * second; its start and its end are told once each.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine } from '../engine/engine.ts';
import { isTransientRefusal, type StoreFault, storeFault } from '../engine/persistence/store-faults.ts';

/** Readonly props of {@link StoreHealth}. */
export interface StoreHealthProps {
  readonly engine: Engine;
  /** The store directory the probe writes in. */
  readonly root: string;
  /** Told when a fault begins (with it) and when it ends (undefined). @default - nobody */
  readonly onChange?: (fault: StoreFault | undefined) => void;
  /** How often a fault is tried again. @default 1000 */
  readonly retryMs?: number;
}

/**
 * A small write in the store (created and removed): the fault it meets when the file system
 * refuses it (disk full, over quota, read-only), else undefined.
 */
export function probeStoreWrite(root: string): StoreFault | undefined {
  const file = join(root, '.write-probe');
  try {
    writeFileSync(file, 'plangate\n');
    rmSync(file, { force: true });
    return undefined;
  } catch (error) {
    return isTransientRefusal(error) ? storeFault(error as Error, true) : undefined;
  }
}

export class StoreHealth {
  private probeFault: StoreFault | undefined;
  private told: StoreFault | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly props: StoreHealthProps) {
    if (props.retryMs !== undefined && !(props.retryMs > 0)) throw new Error('retryMs must be above 0');
    // a fault the engine met on its own (a timer's write) is told within a second, and retried
    this.timer = setInterval(() => {
      if (this.told) props.engine.retryStore();
      this.fault();
    }, props.retryMs ?? 1000);
    this.timer.unref();
  }

  /** The fault that refuses new work now; `probe`: also try a write in the store (before new work, or after a failure). */
  fault(probe = false): StoreFault | undefined {
    if (probe || this.probeFault) this.probe();
    const fault = this.props.engine.storeFault() ?? this.probeFault;
    this.tell(fault);
    return fault;
  }

  /** The 503's message for the current fault, if any: the cause, the fix, and that the server recovers. */
  refusal(probe = false): string | undefined {
    const fault = this.fault(probe);
    if (!fault) return undefined;
    return `the store cannot be written (${fault.advice}); new work is refused until it can, ${fault.transient ? 'which is tried every second: nothing accepted before is lost' : 'and plangate serve must be restarted once it is fixed'}`;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private probe(): void {
    const fault = probeStoreWrite(this.props.root);
    this.probeFault = fault ? (this.probeFault ?? fault) : undefined;
  }

  private tell(fault: StoreFault | undefined): void {
    if ((fault === undefined) === (this.told === undefined)) return;
    this.told = fault;
    this.props.onChange?.(fault);
  }
}
