/** What the tag operations do: tags of state machines and activities (not of versions or aliases: AWS tags neither). */
import type * as sfn from '@aws-sdk/client-sfn';
import { type ArnScope, parseActivityArn, parseStateMachineArn } from './core/arn.ts';
import { type ActivityRecord, type MachineRecord, type MachineRegistry, withTags } from './core/registry.ts';
import { SfnServiceError } from './types.ts';

export class TagOperations {
  constructor(
    private readonly scope: ArnScope,
    private readonly registry: MachineRegistry,
  ) {}

  async tagResource(input: sfn.TagResourceInput): Promise<sfn.TagResourceOutput> {
    const tagged = this.taggable(input.resourceArn);
    tagged.tags = withTags(tagged.tags, input.tags, String(input.resourceArn));
    this.registry.save();
    return {};
  }

  async untagResource(input: sfn.UntagResourceInput): Promise<sfn.UntagResourceOutput> {
    const tagged = this.taggable(input.resourceArn);
    const removed = new Set(input.tagKeys ?? []);
    tagged.tags = (tagged.tags ?? []).filter((t) => !removed.has(t.key));
    this.registry.save();
    return {};
  }

  async listTagsForResource(input: sfn.ListTagsForResourceInput): Promise<sfn.ListTagsForResourceOutput> {
    return { tags: [...(this.taggable(input.resourceArn).tags ?? [])] };
  }

  /** The state machine or activity an ARN names (not a version or alias: AWS tags neither). */
  private taggable(resourceArn: unknown): MachineRecord | ActivityRecord {
    const arn = String(resourceArn);
    const notFound = () => new SfnServiceError('ResourceNotFound', `Resource not found: '${arn}'`);
    if (/^arn:[^:]*:states:[^:]*:[^:]*:activity:/.test(arn)) {
      const activity = this.registry.findActivity(parseActivityArn(this.scope, arn));
      if (!activity) throw notFound();
      return activity;
    }
    if (!/^arn:[^:]*:states:[^:]*:[^:]*:stateMachine:/.test(arn))
      throw new SfnServiceError('InvalidArn', `Invalid Arn: '${arn.slice(0, 200)}'`);
    const ref = parseStateMachineArn(this.scope, arn);
    const machine = this.registry.find(ref.name);
    if (!machine || ref.version !== undefined || ref.alias !== undefined) throw notFound();
    return machine;
  }
}
