/**
 * What the activity operations do: activities kept in the registry, and GetActivityTask, a
 * worker's long poll for the tasks executions queue (core/activities.ts).
 */
import type * as sfn from '@aws-sdk/client-sfn';
import type { ActivityQueues } from './core/activities.ts';
import {
  type ArnScope,
  assertValidName,
  activityArn as buildActivityArn,
  parseActivityArn,
} from './core/arn.ts';
import { type ActivityRecord, type MachineRegistry, withTags } from './core/registry.ts';
import type { FlushScheduler } from './durability.ts';
import { paginate } from './pagination.ts';
import { SfnServiceError } from './types.ts';

/** AWS's default quota of activities per account and region. */
const MAX_ACTIVITIES = 10_000;

/** Readonly props of {@link ActivityOperations}. */
export interface ActivityOperationsProps {
  readonly scope: ArnScope;
  readonly registry: MachineRegistry;
  readonly queues: ActivityQueues;
  readonly flushes: FlushScheduler;
  /** How long GetActivityTask waits for a task before answering without one. */
  readonly pollSeconds: number;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export class ActivityOperations {
  private readonly scope: ArnScope;
  private readonly registry: MachineRegistry;
  private readonly queues: ActivityQueues;
  private readonly flushes: FlushScheduler;
  private readonly pollMs: number;
  private readonly now: () => number;

  constructor(props: ActivityOperationsProps) {
    this.scope = props.scope;
    this.registry = props.registry;
    this.queues = props.queues;
    this.flushes = props.flushes;
    this.pollMs = props.pollSeconds * 1000;
    this.now = props.now;
  }

  async createActivity(input: sfn.CreateActivityInput): Promise<sfn.CreateActivityOutput> {
    assertValidName(input.name, 'Name');
    const arn = buildActivityArn(this.scope, input.name);
    const tags = withTags(undefined, input.tags, arn);
    const existing = this.registry.findActivity(input.name);
    if (existing) {
      // idempotent by name: different tags are ignored, a different encryption is refused (as AWS does)
      if (
        input.encryptionConfiguration !== undefined &&
        JSON.stringify(input.encryptionConfiguration) !== JSON.stringify(existing.encryptionConfiguration)
      ) {
        throw new SfnServiceError(
          'ActivityAlreadyExists',
          `Activity Already Exists: '${arn}' (its encryptionConfiguration cannot be changed)`,
        );
      }
      return { activityArn: arn, creationDate: new Date(existing.creationDate) };
    }
    if (this.registry.allActivities().length >= MAX_ACTIVITIES) {
      throw new SfnServiceError(
        'ActivityLimitExceeded',
        `The maximum number of activities (${MAX_ACTIVITIES}) has been reached`,
      );
    }
    const creationDate = this.now();
    this.registry.addActivity({
      name: input.name,
      arn,
      creationDate,
      encryptionConfiguration: input.encryptionConfiguration,
      ...(tags.length > 0 ? { tags } : {}),
    });
    return { activityArn: arn, creationDate: new Date(creationDate) };
  }

  async describeActivity(input: sfn.DescribeActivityInput): Promise<sfn.DescribeActivityOutput> {
    const activity = this.getActivity(input.activityArn);
    return {
      activityArn: activity.arn,
      name: activity.name,
      creationDate: new Date(activity.creationDate),
      ...(activity.encryptionConfiguration
        ? { encryptionConfiguration: activity.encryptionConfiguration as sfn.EncryptionConfiguration }
        : {}),
    };
  }

  async listActivities(input: sfn.ListActivitiesInput): Promise<sfn.ListActivitiesOutput> {
    const all = this.registry
      .allActivities()
      .sort((a, b) => a.creationDate - b.creationDate)
      .map((a) => ({ activityArn: a.arn, name: a.name, creationDate: new Date(a.creationDate) }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { activities: page, nextToken };
  }

  async deleteActivity(input: sfn.DeleteActivityInput): Promise<sfn.DeleteActivityOutput> {
    this.registry.removeActivity(parseActivityArn(this.scope, input.activityArn));
    return {};
  }

  /**
   * A worker's long poll: the oldest task queued for the activity, else the first one scheduled
   * within the poll (`activityPollSeconds`), else `{}`. `signal` aborts when the worker hangs up,
   * so that no task goes to a worker that is gone.
   */
  async getActivityTask(
    input: sfn.GetActivityTaskInput,
    options?: { readonly signal?: AbortSignal },
  ): Promise<sfn.GetActivityTaskOutput> {
    const activity = this.getActivity(input.activityArn);
    const delivery = await this.queues.poll(activity.arn, input.workerName, this.pollMs, options?.signal);
    // the token is only handed out once its ActivityStarted is as durable as promised
    if (delivery) await this.flushes.persist();
    return delivery ?? {};
  }

  /** The activity an ARN names, if it is one of this engine's (what executions see of activities). */
  find(arn: unknown): ActivityRecord | undefined {
    try {
      return this.registry.findActivity(parseActivityArn(this.scope, arn));
    } catch {
      return undefined; // not an activity ARN of this engine
    }
  }

  private getActivity(arn: unknown): ActivityRecord {
    const name = parseActivityArn(this.scope, arn);
    const activity = this.registry.findActivity(name);
    if (!activity)
      throw new SfnServiceError('ActivityDoesNotExist', `Activity Does Not Exist: '${String(arn)}'`);
    return activity;
  }
}
