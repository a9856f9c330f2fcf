/** State machines (with their published versions and aliases) and activities, kept as one durable snapshot. */
import { randomUUID } from 'node:crypto';
import type { EngineStore } from '../persistence/store.ts';
import { SfnServiceError } from '../types.ts';

export interface VersionRecord {
  readonly version: number;
  readonly definition: string;
  readonly roleArn: string;
  readonly description?: string;
  readonly revisionId: string;
  readonly creationDate: number;
}

export interface AliasRecord {
  readonly name: string;
  description?: string;
  routingConfiguration: Array<{ stateMachineVersionArn: string; weight: number }>;
  readonly creationDate: number;
  updateDate: number;
}

/** A resource tag, as the API carries it. */
export interface Tag {
  readonly key: string;
  readonly value: string;
}

export interface MachineRecord {
  readonly name: string;
  readonly arn: string;
  definition: string;
  roleArn: string;
  readonly type: 'STANDARD' | 'EXPRESS';
  readonly creationDate: number;
  updateDate?: number;
  revisionId: string;
  description?: string;
  loggingConfiguration?: unknown;
  tracingConfiguration?: unknown;
  versions: VersionRecord[];
  nextVersion: number;
  aliases: AliasRecord[];
  /** In the order they were first set. */
  tags?: Tag[];
}

export interface ActivityRecord {
  readonly name: string;
  readonly arn: string;
  readonly creationDate: number;
  readonly encryptionConfiguration?: unknown;
  tags?: Tag[];
}

/** The registry; every change is written through to the store before the API answers. */
export class MachineRegistry {
  private readonly machines = new Map<string, MachineRecord>();
  /** By name, in creation order (ListActivities pages through them in that order). */
  private readonly activities = new Map<string, ActivityRecord>();

  constructor(private readonly store: EngineStore) {
    const snapshot = store.readRegistry() as
      | { machines?: MachineRecord[]; activities?: ActivityRecord[] }
      | undefined;
    for (const m of snapshot?.machines ?? []) this.machines.set(m.name, m);
    for (const a of snapshot?.activities ?? []) this.activities.set(a.name, a);
  }

  /** The machine named `name`; else AWS's StateMachineDoesNotExist naming `arn`, the ARN the caller gave. */
  get(name: string, arn: string): MachineRecord {
    const machine = this.machines.get(name);
    if (!machine)
      throw new SfnServiceError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
    return machine;
  }

  find(name: string): MachineRecord | undefined {
    return this.machines.get(name);
  }

  all(): MachineRecord[] {
    return [...this.machines.values()];
  }

  add(machine: MachineRecord): void {
    this.machines.set(machine.name, machine);
    this.save();
  }

  remove(name: string): void {
    this.machines.delete(name);
    this.save();
  }

  findActivity(name: string): ActivityRecord | undefined {
    return this.activities.get(name);
  }

  allActivities(): ActivityRecord[] {
    return [...this.activities.values()];
  }

  addActivity(activity: ActivityRecord): void {
    this.activities.set(activity.name, activity);
    this.save();
  }

  removeActivity(name: string): void {
    if (this.activities.delete(name)) this.save();
  }

  /** Persists after an in-place change of a record. */
  save(): void {
    this.store.writeRegistry({
      machines: [...this.machines.values()],
      activities: [...this.activities.values()],
    });
  }
}

/** AWS's limit of tags per resource. */
const MAX_TAGS = 50;

/**
 * `current` with `added` set on top (a key already there takes the new value, keeping its place);
 * AWS's TooManyTags when the resource would have more than 50.
 */
export function withTags(
  current: readonly Tag[] | undefined,
  added: readonly { key?: string; value?: string }[] | undefined,
  resourceArn: string,
): Tag[] {
  const tags = new Map((current ?? []).map((t) => [t.key, t.value]));
  for (const t of added ?? []) {
    if (typeof t.key !== 'string' || t.key.length < 1 || t.key.length > 128)
      throw new SfnServiceError('ValidationException', 'A tag key must be a string of 1 to 128 characters');
    tags.set(t.key, typeof t.value === 'string' ? t.value : '');
  }
  if (tags.size > MAX_TAGS) {
    throw new SfnServiceError(
      'TooManyTags',
      `Too many tags: '${resourceArn}' would have ${tags.size}, and a resource takes at most ${MAX_TAGS}`,
    );
  }
  return [...tags].map(([key, value]) => ({ key, value }));
}

export function newRevisionId(): string {
  return randomUUID();
}
