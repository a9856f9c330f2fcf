import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EventBridgeClient,
  ListRulesCommand,
  PutEventsCommand,
  PutRuleCommand,
  PutTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS } from '../../lib/aws-local/clients.ts';
import { matchesPattern } from '../../lib/aws-local/event-pattern.ts';
import { type BusEvent, type LocalEventBus, startLocalEventBus } from '../../lib/aws-local/eventbus.ts';

let dir: string;
let bus: LocalEventBus;
let client: EventBridgeClient;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-bus-'));
  bus = await startLocalEventBus({ dataDir: dir });
  client = new EventBridgeClient({
    region: 'us-east-1',
    endpoint: bus.endpoint,
    credentials: LOCAL_CREDENTIALS,
  });
});
afterAll(async () => {
  client.destroy();
  await bus.close();
  await rm(dir, { recursive: true, force: true });
});

describe('local event bus through @aws-sdk/client-eventbridge', () => {
  it('accepts PutEvents, archives each event and fans out to matching subscribers only', async () => {
    const seen: BusEvent[] = [];
    const other: BusEvent[] = [];
    const off = bus.subscribe({ source: ['plangate'], 'detail-type': ['TASK_COMPLETED'] }, (e) => {
      seen.push(e);
    });
    bus.subscribe({ source: ['someone-else'] }, (e) => {
      other.push(e);
    });
    const out = await client.send(
      new PutEventsCommand({
        Entries: [
          { Source: 'plangate', DetailType: 'TASK_COMPLETED', Detail: JSON.stringify({ taskId: 'a' }) },
          { Source: 'plangate', DetailType: 'TASK_STARTED', Detail: JSON.stringify({ taskId: 'b' }) },
        ],
      }),
    );
    await bus.drain();
    off();
    expect(out.FailedEntryCount).toBe(0);
    expect(out.Entries?.every((e) => e.EventId)).toBe(true);
    expect(seen.map((e) => e.detail)).toEqual([{ taskId: 'a' }]);
    expect(other).toEqual([]);
    const lines = (await readFile(bus.archivePath as string, 'utf8')).trim().split('\n');
    expect(lines.map((l) => JSON.parse(l)['detail-type'])).toEqual(['TASK_COMPLETED', 'TASK_STARTED']);
  });

  it('reports an invalid entry per entry and keeps the valid ones', async () => {
    const out = await client.send(
      new PutEventsCommand({
        Entries: [
          { Source: 'plangate', DetailType: 'X', Detail: 'not json' },
          { Source: 'plangate', DetailType: 'Y', Detail: '{}' },
        ],
      }),
    );
    expect(out.FailedEntryCount).toBe(1);
    expect(out.Entries?.[0]?.ErrorCode).toBe('InvalidArgument');
    expect(out.Entries?.[1]?.EventId).toBeTruthy();
  });

  it('creates rules, lists them and delivers matching events to in-process target handlers', async () => {
    const delivered: unknown[] = [];
    bus.onTarget('arn:local:notifier', (e) => {
      delivered.push(e.detail);
    });
    await client.send(
      new PutRuleCommand({
        Name: 'gates',
        EventPattern: JSON.stringify({ source: ['plangate'], 'detail-type': [{ prefix: 'GATE_' }] }),
      }),
    );
    await client.send(
      new PutTargetsCommand({ Rule: 'gates', Targets: [{ Id: 'n', Arn: 'arn:local:notifier' }] }),
    );
    const rules = await client.send(new ListRulesCommand({ NamePrefix: 'ga' }));
    expect(rules.Rules?.map((r) => r.Name)).toEqual(['gates']);
    await client.send(
      new PutEventsCommand({
        Entries: [
          { Source: 'plangate', DetailType: 'GATE_APPROVED', Detail: '{"n":1}' },
          { Source: 'plangate', DetailType: 'TASK_FAILED', Detail: '{"n":2}' },
        ],
      }),
    );
    await bus.drain();
    expect(delivered).toEqual([{ n: 1 }]);
  });

  it('answers an unknown operation and a bad pattern with AWS-shaped errors', async () => {
    await expect(
      client.send(new PutRuleCommand({ Name: 'bad', EventPattern: '{"source":"plangate"}' })),
    ).rejects.toMatchObject({
      name: 'InvalidEventPatternException',
    });
  });
});

describe('event patterns', () => {
  const event = { source: 'plangate', 'detail-type': 'TASK_FAILED', detail: { n: 5, tags: ['a', 'b'] } };
  it.each([
    [{ source: ['plangate'] }, true],
    [{ source: ['other'] }, false],
    [{ detail: { n: [{ numeric: ['>', 3, '<=', 5] }] } }, true],
    [{ detail: { n: [{ numeric: ['>', 5] }] } }, false],
    [{ detail: { tags: ['b'] } }, true],
    [{ detail: { missing: [{ exists: false }] } }, true],
    [{ detail: { n: [{ exists: false }] } }, false],
    [{ 'detail-type': [{ 'anything-but': ['TASK_FAILED'] }] }, false],
    [{ 'detail-type': [{ suffix: '_FAILED' }] }, true],
  ])('%j → %s', (pattern, expected) => {
    expect(matchesPattern(event, pattern as never)).toBe(expected);
  });
});
