/**
 * The plangate event bus: every harness event is put here (as well as appended to the events table),
 * and archived so past events can be replayed to new consumers.
 */
import { Duration } from 'aws-cdk-lib';
import { Archive, EventBus } from 'aws-cdk-lib/aws-events';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { EVENT_SOURCE } from '../runtime/journal/journal.ts';

export interface PlanEventBusProps {
  /**
   * How long the archive keeps events.
   * @default Duration.days(365)
   */
  readonly archiveRetention?: Duration;
}

export class PlanEventBus extends Construct {
  public readonly bus: EventBus;
  public readonly archive: Archive;

  constructor(scope: Construct, id: string, props: PlanEventBusProps = {}) {
    super(scope, id);
    this.bus = new EventBus(this, 'Bus', { description: 'plangate harness events' });
    this.archive = new Archive(this, 'Archive', {
      sourceEventBus: this.bus,
      description: 'Every plangate event, for replay',
      eventPattern: { source: [EVENT_SOURCE] },
      retention: props.archiveRetention ?? Duration.days(365),
    });
  }

  /** Lets `grantee` put events on this bus (events:PutEvents on this bus only). */
  grantPublish(grantee: IGrantable): void {
    this.bus.grantPutEventsTo(grantee);
  }
}
