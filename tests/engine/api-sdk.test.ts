import * as sfn from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/index.ts';

const ROLE = 'arn:aws:iam::123456789012:role/plangate';

const passMachine = JSON.stringify({
  StartAt: 'Hello',
  States: {
    Hello: { Type: 'Pass', Parameters: { 'greeting.$': "States.Format('hi {}', $.who)" }, End: true },
  },
});

const gateMachine = JSON.stringify({
  StartAt: 'Gate',
  States: {
    Gate: {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: 'gate', Payload: { 'token.$': '$$.Task.Token' } },
      HeartbeatSeconds: 60,
      Next: 'Done',
    },
    Done: { Type: 'Succeed' },
  },
});

const failMachine = JSON.stringify({
  StartAt: 'Boom',
  States: {
    Boom: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:boom', End: true },
  },
});

describe('the embedded engine through @aws-sdk/client-sfn', () => {
  let engine: Engine;
  let server: EngineServer;
  let client: sfn.SFNClient;
  const tokens: string[] = [];
  let boomCalls = 0;

  beforeAll(async () => {
    const invokeResource = createResourceInvoker({
      lambdaHandlers: {
        gate: async (event) => {
          tokens.push((event as { token: string }).token);
          return { sent: true };
        },
        boom: async () => {
          boomCalls++;
          if (boomCalls === 1) throw new Error('first run fails');
          return { ok: true };
        },
      },
    });
    engine = createEngine({ storeDir: undefined, invokeResource, timeScale: 0 });
    server = await startEngineServer({ engine });
    client = new sfn.SFNClient({
      endpoint: server.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
      // StartSyncExecution's endpoint has the host prefix "sync-", which a loopback address cannot take.
      disableHostPrefix: true,
    });
  });

  afterAll(async () => {
    client.destroy();
    await server.close();
    await engine.close();
  });

  async function settled(executionArn: string): Promise<sfn.DescribeExecutionOutput> {
    for (;;) {
      const described = await client.send(new sfn.DescribeExecutionCommand({ executionArn }));
      if (described.status !== 'RUNNING') return described;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async function waitForToken(count: number): Promise<string> {
    while (tokens.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
    return tokens[count - 1]!;
  }

  it('manages state machines, versions and aliases', async () => {
    const created = await client.send(
      new sfn.CreateStateMachineCommand({
        name: 'hello',
        definition: passMachine,
        roleArn: ROLE,
        publish: true,
      }),
    );
    expect(created.stateMachineArn).toBe('arn:aws:states:us-east-1:123456789012:stateMachine:hello');
    expect(created.creationDate).toBeInstanceOf(Date);
    expect(created.stateMachineVersionArn).toBe(`${created.stateMachineArn}:1`);
    const described = await client.send(
      new sfn.DescribeStateMachineCommand({ stateMachineArn: created.stateMachineArn }),
    );
    expect(described).toMatchObject({
      name: 'hello',
      definition: passMachine,
      status: 'ACTIVE',
      type: 'STANDARD',
    });
    const listed = await client.send(new sfn.ListStateMachinesCommand({}));
    expect(listed.stateMachines?.map((m) => m.name)).toContain('hello');
    const updated = await client.send(
      new sfn.UpdateStateMachineCommand({
        stateMachineArn: created.stateMachineArn,
        definition: passMachine.replace('hi', 'hello'),
      }),
    );
    expect(updated.updateDate).toBeInstanceOf(Date);
    const published = await client.send(
      new sfn.PublishStateMachineVersionCommand({ stateMachineArn: created.stateMachineArn }),
    );
    expect(published.stateMachineVersionArn).toBe(`${created.stateMachineArn}:2`);
    const versions = await client.send(
      new sfn.ListStateMachineVersionsCommand({ stateMachineArn: created.stateMachineArn }),
    );
    expect(versions.stateMachineVersions).toHaveLength(2);
    const alias = await client.send(
      new sfn.CreateStateMachineAliasCommand({
        name: 'live',
        routingConfiguration: [{ stateMachineVersionArn: created.stateMachineVersionArn, weight: 100 }],
      }),
    );
    expect(alias.stateMachineAliasArn).toBe(`${created.stateMachineArn}:live`);
    await client.send(
      new sfn.UpdateStateMachineAliasCommand({
        stateMachineAliasArn: alias.stateMachineAliasArn,
        routingConfiguration: [{ stateMachineVersionArn: published.stateMachineVersionArn, weight: 100 }],
      }),
    );
    const describedAlias = await client.send(
      new sfn.DescribeStateMachineAliasCommand({ stateMachineAliasArn: alias.stateMachineAliasArn }),
    );
    expect(describedAlias.routingConfiguration?.[0]?.stateMachineVersionArn).toBe(
      published.stateMachineVersionArn,
    );
    const aliases = await client.send(
      new sfn.ListStateMachineAliasesCommand({ stateMachineArn: created.stateMachineArn }),
    );
    expect(aliases.stateMachineAliases).toHaveLength(1);
    const viaAlias = await client.send(
      new sfn.StartExecutionCommand({
        stateMachineArn: alias.stateMachineAliasArn,
        input: '{"who":"alias"}',
      }),
    );
    expect(JSON.parse((await settled(viaAlias.executionArn!)).output ?? '')).toEqual({
      greeting: 'hello alias',
    });
    await client.send(
      new sfn.DeleteStateMachineAliasCommand({ stateMachineAliasArn: alias.stateMachineAliasArn }),
    );
    await client.send(
      new sfn.DeleteStateMachineVersionCommand({ stateMachineVersionArn: created.stateMachineVersionArn }),
    );
    const after = await client.send(
      new sfn.ListStateMachineVersionsCommand({ stateMachineArn: created.stateMachineArn }),
    );
    expect(after.stateMachineVersions).toHaveLength(1);
  });

  it('refuses an invalid definition with InvalidDefinition naming the location', async () => {
    const error = await client
      .send(
        new sfn.CreateStateMachineCommand({
          name: 'broken',
          definition: JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', Next: 'Nowhere' } } }),
          roleArn: ROLE,
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(sfn.InvalidDefinition);
    expect((error as Error).message).toContain('/States/A/Next');
    const validated = await client.send(
      new sfn.ValidateStateMachineDefinitionCommand({ definition: '{"StartAt": 1}' }),
    );
    expect(validated.result).toBe('FAIL');
    expect(validated.diagnostics?.length).toBeGreaterThan(0);
  });

  it('runs, lists and describes executions with their AWS-shaped history', async () => {
    const arn = 'arn:aws:states:us-east-1:123456789012:stateMachine:hello';
    const started = await client.send(
      new sfn.StartExecutionCommand({ stateMachineArn: arn, name: 'run-1', input: '{"who":"sdk"}' }),
    );
    expect(started.startDate).toBeInstanceOf(Date);
    const done = await settled(started.executionArn!);
    expect(done).toMatchObject({ status: 'SUCCEEDED', name: 'run-1' });
    expect(done.stopDate).toBeInstanceOf(Date);
    const history = await client.send(
      new sfn.GetExecutionHistoryCommand({ executionArn: started.executionArn }),
    );
    expect(history.events?.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'PassStateEntered',
      'PassStateExited',
      'ExecutionSucceeded',
    ]);
    expect(history.events?.[0]?.timestamp).toBeInstanceOf(Date);
    const listed = await client.send(
      new sfn.ListExecutionsCommand({ stateMachineArn: arn, statusFilter: 'SUCCEEDED' }),
    );
    expect(listed.executions?.map((e) => e.name)).toContain('run-1');
    const missing = await client
      .send(
        new sfn.DescribeExecutionCommand({
          executionArn: `${arn.replace('stateMachine', 'execution')}:nope`,
        }),
      )
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(sfn.ExecutionDoesNotExist);
  });

  it('waits on task tokens: heartbeat, success, failure, and AWS errors for bad tokens', async () => {
    const { stateMachineArn } = await client.send(
      new sfn.CreateStateMachineCommand({ name: 'gated', definition: gateMachine, roleArn: ROLE }),
    );
    const first = await client.send(new sfn.StartExecutionCommand({ stateMachineArn, input: '{}' }));
    const token = await waitForToken(1);
    await client.send(new sfn.SendTaskHeartbeatCommand({ taskToken: token }));
    await client.send(new sfn.SendTaskSuccessCommand({ taskToken: token, output: '{"approved":true}' }));
    expect(await settled(first.executionArn!)).toMatchObject({
      status: 'SUCCEEDED',
      output: '{"approved":true}',
    });
    const closed = await client
      .send(new sfn.SendTaskSuccessCommand({ taskToken: token, output: '{}' }))
      .catch((e: unknown) => e);
    expect(closed).toBeInstanceOf(sfn.SFNServiceException);
    expect(['TaskDoesNotExist', 'TaskTimedOut']).toContain((closed as Error).name);
    const invalid = await client
      .send(new sfn.SendTaskHeartbeatCommand({ taskToken: 'not-a-token' }))
      .catch((e: unknown) => e);
    expect((invalid as Error).name).toBe('InvalidToken');
    const second = await client.send(new sfn.StartExecutionCommand({ stateMachineArn, input: '{}' }));
    await client.send(
      new sfn.SendTaskFailureCommand({ taskToken: await waitForToken(2), error: 'Rejected', cause: 'no' }),
    );
    expect(await settled(second.executionArn!)).toMatchObject({
      status: 'FAILED',
      error: 'Rejected',
      cause: 'no',
    });
    const third = await client.send(new sfn.StartExecutionCommand({ stateMachineArn, input: '{}' }));
    await waitForToken(3);
    const stopped = await client.send(
      new sfn.StopExecutionCommand({ executionArn: third.executionArn, error: 'Cancelled' }),
    );
    expect(stopped.stopDate).toBeInstanceOf(Date);
    expect(await settled(third.executionArn!)).toMatchObject({ status: 'ABORTED' });
  });

  it('redrives a failed execution and runs StartSyncExecution on an EXPRESS machine', async () => {
    const { stateMachineArn } = await client.send(
      new sfn.CreateStateMachineCommand({ name: 'flaky', definition: failMachine, roleArn: ROLE }),
    );
    const started = await client.send(new sfn.StartExecutionCommand({ stateMachineArn, input: '{}' }));
    expect(await settled(started.executionArn!)).toMatchObject({ status: 'FAILED', error: 'Error' });
    const redriven = await client.send(
      new sfn.RedriveExecutionCommand({ executionArn: started.executionArn }),
    );
    expect(redriven.redriveDate).toBeInstanceOf(Date);
    expect(await settled(started.executionArn!)).toMatchObject({ status: 'SUCCEEDED', redriveCount: 1 });
    const express = await client.send(
      new sfn.CreateStateMachineCommand({
        name: 'quick',
        definition: passMachine,
        roleArn: ROLE,
        type: 'EXPRESS',
      }),
    );
    const sync = await client.send(
      new sfn.StartSyncExecutionCommand({
        stateMachineArn: express.stateMachineArn,
        input: '{"who":"sync"}',
      }),
    );
    expect(sync).toMatchObject({ status: 'SUCCEEDED', output: '{"greeting":"hi sync"}' });
    await client.send(new sfn.DeleteStateMachineCommand({ stateMachineArn: express.stateMachineArn }));
    const gone = await client
      .send(new sfn.DescribeStateMachineCommand({ stateMachineArn: express.stateMachineArn }))
      .catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(sfn.StateMachineDoesNotExist);
  });

  it('lists the executions of a version or an alias, filters by redrive, and describes what an execution ran', async () => {
    const { stateMachineArn } = await client.send(
      new sfn.CreateStateMachineCommand({
        name: 'listed',
        definition: passMachine,
        roleArn: ROLE,
        publish: true,
      }),
    );
    const v1 = `${stateMachineArn}:1`;
    await client.send(
      new sfn.CreateStateMachineAliasCommand({
        name: 'live',
        routingConfiguration: [{ stateMachineVersionArn: v1, weight: 100 }],
      }),
    );
    const run = async (arn: string, name: string) => {
      const { executionArn } = await client.send(
        new sfn.StartExecutionCommand({ stateMachineArn: arn, name, input: '{"who":"x"}' }),
      );
      return settled(executionArn!);
    };
    await run(v1, 'by-version');
    await run(`${stateMachineArn}:live`, 'by-alias');
    await run(stateMachineArn!, 'latest');
    const names = async (input: sfn.ListExecutionsInput) =>
      ((await client.send(new sfn.ListExecutionsCommand(input))).executions ?? []).map((e) => e.name).sort();
    expect(await names({ stateMachineArn })).toEqual(['by-alias', 'by-version', 'latest']);
    expect(await names({ stateMachineArn: v1 })).toEqual(['by-alias', 'by-version']);
    expect(await names({ stateMachineArn: `${stateMachineArn}:live` })).toEqual(['by-alias']);
    expect(await names({ stateMachineArn, redriveFilter: 'REDRIVEN' })).toEqual([]);
    expect(await names({ stateMachineArn, redriveFilter: 'NOT_REDRIVEN' })).toHaveLength(3);

    const latest = `${stateMachineArn!.replace(':stateMachine:', ':execution:')}:latest`;
    const described = await client.send(new sfn.DescribeExecutionCommand({ executionArn: latest }));
    expect(described.redriveStatusReason).toBe('Execution is SUCCEEDED and cannot be redriven');
    const metadata = await client.send(
      new sfn.DescribeExecutionCommand({ executionArn: latest, includedData: 'METADATA_ONLY' }),
    );
    expect(metadata).not.toHaveProperty('input');
    expect(metadata).not.toHaveProperty('output');
    const ran = await client.send(new sfn.DescribeStateMachineForExecutionCommand({ executionArn: latest }));
    expect(ran).toMatchObject({ stateMachineArn, name: 'listed', definition: passMachine, roleArn: ROLE });

    const missing = await client
      .send(new sfn.DescribeStateMachineCommand({ stateMachineArn: `${stateMachineArn}-gone` }))
      .catch((e: unknown) => e);
    expect((missing as Error).message).toBe(`State Machine Does Not Exist: '${stateMachineArn}-gone'`);
  });

  it('tags state machines and activities, and truncates validation diagnostics at maxResults', async () => {
    const { stateMachineArn } = await client.send(
      new sfn.CreateStateMachineCommand({
        name: 'tagged',
        definition: passMachine,
        roleArn: ROLE,
        tags: [{ key: 'team', value: 'a' }],
      }),
    );
    await client.send(
      new sfn.TagResourceCommand({
        resourceArn: stateMachineArn,
        tags: [
          { key: 'team', value: 'b' },
          { key: 'env', value: 'dev' },
        ],
      }),
    );
    await client.send(new sfn.UntagResourceCommand({ resourceArn: stateMachineArn, tagKeys: ['env'] }));
    const { tags } = await client.send(new sfn.ListTagsForResourceCommand({ resourceArn: stateMachineArn }));
    expect(tags).toEqual([{ key: 'team', value: 'b' }]);
    const tooMany = Array.from({ length: 51 }, (_, i) => ({ key: `k${i}`, value: '' }));
    await expect(
      client.send(new sfn.TagResourceCommand({ resourceArn: stateMachineArn, tags: tooMany })),
    ).rejects.toBeInstanceOf(sfn.TooManyTags);
    await expect(
      client.send(new sfn.ListTagsForResourceCommand({ resourceArn: `${stateMachineArn}:1` })),
    ).rejects.toBeInstanceOf(sfn.ResourceNotFound);

    const broken = JSON.stringify({
      StartAt: 'A',
      States: { A: { Type: 'Pass', Next: 'X' }, B: { Type: 'Pass', Next: 'Y' } },
    });
    const all = await client.send(new sfn.ValidateStateMachineDefinitionCommand({ definition: broken }));
    expect(all.truncated).toBe(false);
    expect(all.diagnostics!.length).toBeGreaterThan(1);
    const one = await client.send(
      new sfn.ValidateStateMachineDefinitionCommand({ definition: broken, maxResults: 1 }),
    );
    expect(one).toMatchObject({ truncated: true, diagnostics: [all.diagnostics![0]] });
  });
});
