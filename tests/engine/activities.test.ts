import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as sfn from '@aws-sdk/client-sfn';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine, type EngineOptions } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/index.ts';

const ROLE = 'arn:aws:iam::123456789012:role/plangate';
const ACTIVITY_PREFIX = 'arn:aws:states:us-east-1:123456789012:activity:';

/** An engine served over HTTP and an SDK client for it: every call below goes through the real API. */
interface Harness {
  readonly engine: Engine;
  readonly server: EngineServer;
  readonly client: sfn.SFNClient;
  close(): Promise<void>;
}

async function harness(options: Partial<EngineOptions> = {}): Promise<Harness> {
  const engine = createEngine({
    storeDir: undefined,
    invokeResource: createResourceInvoker(),
    timeScale: 0,
    ...options,
  });
  const server = await startEngineServer({ engine });
  const client = new sfn.SFNClient({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    maxAttempts: 1,
  });
  return {
    engine,
    server,
    client,
    close: async () => {
      client.destroy();
      await server.close();
      await engine.close();
    },
  };
}

async function newActivity(client: sfn.SFNClient, name: string): Promise<string> {
  const { activityArn } = await client.send(new sfn.CreateActivityCommand({ name }));
  return activityArn!;
}

async function newMachine(
  client: sfn.SFNClient,
  name: string,
  states: Record<string, unknown>,
  startAt = 'Work',
): Promise<string> {
  const { stateMachineArn } = await client.send(
    new sfn.CreateStateMachineCommand({
      name,
      roleArn: ROLE,
      definition: JSON.stringify({ StartAt: startAt, States: states }),
    }),
  );
  return stateMachineArn!;
}

async function start(client: sfn.SFNClient, stateMachineArn: string, input: unknown): Promise<string> {
  const { executionArn } = await client.send(
    new sfn.StartExecutionCommand({ stateMachineArn, input: JSON.stringify(input) }),
  );
  return executionArn!;
}

async function settled(client: sfn.SFNClient, executionArn: string): Promise<sfn.DescribeExecutionOutput> {
  for (;;) {
    const described = await client.send(new sfn.DescribeExecutionCommand({ executionArn }));
    if (described.status !== 'RUNNING') return described;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function history(client: sfn.SFNClient, executionArn: string): Promise<sfn.HistoryEvent[]> {
  const { events } = await client.send(
    new sfn.GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }),
  );
  return events ?? [];
}

/** Polls until the execution's history holds an event of `type`. */
async function reached(client: sfn.SFNClient, executionArn: string, type: string): Promise<void> {
  while (!(await history(client, executionArn)).some((e) => e.type === type)) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error('expected the call to fail');
  return outcome;
}

/** A machine of one activity Task, `Work`, with extra fields. */
function activityTask(activityArn: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { Work: { Type: 'Task', Resource: activityArn, End: true, ...fields } };
}

describe('activities through @aws-sdk/client-sfn (time scaled to 0)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await harness({ activityPollSeconds: 0.3 });
  });

  afterAll(async () => {
    await h.close();
  });

  it('creates (idempotently by name), describes, lists page by page and deletes activities', async () => {
    const created = await h.client.send(new sfn.CreateActivityCommand({ name: 'ops-a' }));
    expect(created.activityArn).toBe(`${ACTIVITY_PREFIX}ops-a`);
    expect(created.creationDate).toBeInstanceOf(Date);
    const again = await h.client.send(
      new sfn.CreateActivityCommand({ name: 'ops-a', tags: [{ key: 'ignored', value: 'yes' }] }),
    );
    expect(again).toMatchObject({ activityArn: created.activityArn, creationDate: created.creationDate });

    const described = await h.client.send(
      new sfn.DescribeActivityCommand({ activityArn: created.activityArn }),
    );
    expect(described).toMatchObject({
      activityArn: created.activityArn,
      name: 'ops-a',
      creationDate: created.creationDate,
    });

    for (const name of ['ops-b', 'ops-c', 'ops-d', 'ops-e']) await newActivity(h.client, name);
    const names: string[] = [];
    let nextToken: string | undefined;
    let pages = 0;
    do {
      const page = await h.client.send(new sfn.ListActivitiesCommand({ maxResults: 2, nextToken }));
      expect(page.activities!.length).toBeLessThanOrEqual(2);
      for (const a of page.activities ?? []) {
        expect(a.activityArn).toBe(`${ACTIVITY_PREFIX}${a.name}`);
        expect(a.creationDate).toBeInstanceOf(Date);
        names.push(a.name!);
      }
      nextToken = page.nextToken;
      pages++;
    } while (nextToken);
    expect(names.filter((n) => n.startsWith('ops-'))).toEqual(['ops-a', 'ops-b', 'ops-c', 'ops-d', 'ops-e']);
    expect(pages).toBeGreaterThanOrEqual(3);

    await h.client.send(new sfn.DeleteActivityCommand({ activityArn: created.activityArn }));
    expect(
      await failure(h.client.send(new sfn.DescribeActivityCommand({ activityArn: created.activityArn }))),
    ).toBeInstanceOf(sfn.ActivityDoesNotExist);
    const listed = await h.client.send(new sfn.ListActivitiesCommand({}));
    expect(listed.activities?.map((a) => a.name)).not.toContain('ops-a');
    // deleting what is gone is not an error
    await h.client.send(new sfn.DeleteActivityCommand({ activityArn: created.activityArn }));
  });

  it('answers with AWS errors: ActivityDoesNotExist, InvalidArn, InvalidName, ActivityAlreadyExists', async () => {
    const unknown = `${ACTIVITY_PREFIX}never-created`;
    expect(
      await failure(h.client.send(new sfn.GetActivityTaskCommand({ activityArn: unknown }))),
    ).toBeInstanceOf(sfn.ActivityDoesNotExist);
    expect(
      await failure(h.client.send(new sfn.DescribeActivityCommand({ activityArn: unknown }))),
    ).toBeInstanceOf(sfn.ActivityDoesNotExist);
    expect(
      await failure(
        h.client.send(
          new sfn.DescribeActivityCommand({
            activityArn: 'arn:aws:states:us-east-1:123456789012:stateMachine:x',
          }),
        ),
      ),
    ).toBeInstanceOf(sfn.InvalidArn);
    expect(await failure(h.client.send(new sfn.CreateActivityCommand({ name: 'has space' })))).toBeInstanceOf(
      sfn.InvalidName,
    );
    await h.client.send(
      new sfn.CreateActivityCommand({ name: 'keyed', encryptionConfiguration: { type: 'AWS_OWNED_KEY' } }),
    );
    expect(
      await failure(
        h.client.send(
          new sfn.CreateActivityCommand({
            name: 'keyed',
            encryptionConfiguration: {
              type: 'CUSTOMER_MANAGED_KMS_KEY',
              kmsKeyId: 'arn:aws:kms:us-east-1:123456789012:key/k',
            },
          }),
        ),
      ),
    ).toBeInstanceOf(sfn.ActivityAlreadyExists);
  });

  it('runs an activity Task by a worker loop: GetActivityTask, SendTaskHeartbeat, SendTaskSuccess', async () => {
    const activityArn = await newActivity(h.client, 'double');
    const machine = await newMachine(h.client, 'double-machine', {
      Work: {
        Type: 'Task',
        Resource: activityArn,
        Parameters: { 'n.$': '$.n' },
        TimeoutSeconds: 300,
        HeartbeatSeconds: 60,
        ResultPath: '$.result',
        End: true,
      },
    });
    const executions = await Promise.all([1, 2, 3].map((n) => start(h.client, machine, { n })));
    const tokens: string[] = [];
    let handled = 0;
    while (handled < executions.length) {
      const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'loop' }));
      if (!task.taskToken) continue;
      tokens.push(task.taskToken);
      const { n } = JSON.parse(task.input!) as { n: number };
      await h.client.send(new sfn.SendTaskHeartbeatCommand({ taskToken: task.taskToken }));
      await h.client.send(
        new sfn.SendTaskSuccessCommand({
          taskToken: task.taskToken,
          output: JSON.stringify({ doubled: n * 2 }),
        }),
      );
      handled++;
    }
    for (const [i, arn] of executions.entries()) {
      const done = await settled(h.client, arn);
      expect(done.status).toBe('SUCCEEDED');
      expect(JSON.parse(done.output!)).toEqual({ n: i + 1, result: { doubled: (i + 1) * 2 } });
    }

    const events = await history(h.client, executions[0]!);
    expect(events.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'ActivityScheduled',
      'ActivityStarted',
      'ActivitySucceeded',
      'TaskStateExited',
      'ExecutionSucceeded',
    ]);
    expect(events[2]?.activityScheduledEventDetails).toEqual({
      resource: activityArn,
      input: '{"n":1}',
      inputDetails: { truncated: false },
      timeoutInSeconds: 300,
      heartbeatInSeconds: 60,
    });
    expect(events[3]?.activityStartedEventDetails).toEqual({ workerName: 'loop' });
    expect(events[4]?.activitySucceededEventDetails).toEqual({
      output: '{"doubled":2}',
      outputDetails: { truncated: false },
    });
    // a token is a secret of the worker: never in a history
    const all = JSON.stringify(await Promise.all(executions.map((arn) => history(h.client, arn))));
    for (const token of tokens) expect(all).not.toContain(token);
    // a finished task's token is spent
    expect(
      await failure(h.client.send(new sfn.SendTaskSuccessCommand({ taskToken: tokens[0], output: '{}' }))),
    ).toBeInstanceOf(sfn.TaskTimedOut);
  });

  it('hands a worker a task scheduled while it polls, and ends an empty poll with no token after the wait', async () => {
    const activityArn = await newActivity(h.client, 'prompt');
    const began = Date.now();
    const empty = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'idle' }));
    expect(empty.taskToken).toBeUndefined();
    expect(empty.input).toBeUndefined();
    expect(Date.now() - began).toBeGreaterThanOrEqual(250);

    const machine = await newMachine(h.client, 'prompt-machine', activityTask(activityArn));
    const polling = h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'eager' }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const execution = await start(h.client, machine, { hello: 'worker' });
    const task = await polling;
    expect(task.input).toBe('{"hello":"worker"}');
    await h.client.send(new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '"ok"' }));
    expect(await settled(h.client, execution)).toMatchObject({ status: 'SUCCEEDED', output: '"ok"' });
  });

  it('fails the task with the worker error and cause: ActivityFailed, then Retry and Catch as for any task', async () => {
    const activityArn = await newActivity(h.client, 'flaky');
    const machine = await newMachine(h.client, 'flaky-machine', {
      Work: {
        Type: 'Task',
        Resource: activityArn,
        Retry: [{ ErrorEquals: ['Worker.Flaky'], MaxAttempts: 1, IntervalSeconds: 1 }],
        Catch: [{ ErrorEquals: ['Worker.Broken'], ResultPath: '$.caught', Next: 'Recovered' }],
        End: true,
      },
      Recovered: { Type: 'Pass', End: true },
    });
    const execution = await start(h.client, machine, { job: 1 });
    const answers = [
      { error: 'Worker.Flaky', cause: 'try again' },
      { error: 'Worker.Broken', cause: 'disk on fire' },
    ];
    for (const answer of answers) {
      let task: sfn.GetActivityTaskOutput;
      do task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'w' }));
      while (!task.taskToken);
      await h.client.send(new sfn.SendTaskFailureCommand({ taskToken: task.taskToken, ...answer }));
    }
    const done = await settled(h.client, execution);
    expect(done.status).toBe('SUCCEEDED');
    expect(JSON.parse(done.output!)).toEqual({
      job: 1,
      caught: { Error: 'Worker.Broken', Cause: 'disk on fire' },
    });
    const events = await history(h.client, execution);
    expect(events.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'ActivityScheduled',
      'ActivityStarted',
      'ActivityFailed',
      'ActivityScheduled',
      'ActivityStarted',
      'ActivityFailed',
      'TaskStateExited',
      'PassStateEntered',
      'PassStateExited',
      'ExecutionSucceeded',
    ]);
    expect(events[4]?.activityFailedEventDetails).toEqual({ error: 'Worker.Flaky', cause: 'try again' });
    expect(events[7]?.activityFailedEventDetails).toEqual({ error: 'Worker.Broken', cause: 'disk on fire' });
  });

  it('delivers each task to exactly one of two competing workers', async () => {
    const activityArn = await newActivity(h.client, 'shared');
    const machine = await newMachine(h.client, 'shared-machine', activityTask(activityArn));
    const count = 24;
    const executions = await Promise.all(
      Array.from({ length: count }, (_, i) => start(h.client, machine, { job: i })),
    );
    const delivered: Array<{ worker: string; job: number }> = [];
    const worker = async (name: string) => {
      while (delivered.length < count) {
        const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: name }));
        if (!task.taskToken) continue;
        const { job } = JSON.parse(task.input!) as { job: number };
        delivered.push({ worker: name, job });
        // yields between taking and answering, so that the two workers interleave
        await new Promise((resolve) => setTimeout(resolve, 1));
        await h.client.send(
          new sfn.SendTaskSuccessCommand({
            taskToken: task.taskToken,
            output: JSON.stringify({ job, by: name }),
          }),
        );
      }
    };
    await Promise.all([worker('left'), worker('right')]);
    expect(delivered.map((d) => d.job).sort((a, b) => a - b)).toEqual(
      Array.from({ length: count }, (_, i) => i),
    );
    for (const [job, arn] of executions.entries()) {
      const done = await settled(h.client, arn);
      expect(done.status).toBe('SUCCEEDED');
      const by = delivered.find((d) => d.job === job)?.worker;
      expect(JSON.parse(done.output!)).toEqual({ job, by });
      const started = (await history(h.client, arn)).filter((e) => e.type === 'ActivityStarted');
      expect(started).toHaveLength(1);
    }
  });

  it('gives no task to a worker that hung up its poll', async () => {
    const activityArn = await newActivity(h.client, 'hangup');
    const machine = await newMachine(h.client, 'hangup-machine', activityTask(activityArn));
    const gone = new AbortController();
    const abandoned = h.client
      .send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'gone' }), { abortSignal: gone.signal })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    gone.abort();
    await abandoned;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const execution = await start(h.client, machine, { for: 'present' });
    const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'present' }));
    expect(task.input).toBe('{"for":"present"}');
    await h.client.send(new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '{}' }));
    expect((await settled(h.client, execution)).status).toBe('SUCCEEDED');
    const started = (await history(h.client, execution)).find((e) => e.type === 'ActivityStarted');
    expect(started?.activityStartedEventDetails).toEqual({ workerName: 'present' });
  });

  it('withdraws the task of a stopped execution', async () => {
    const activityArn = await newActivity(h.client, 'stopped');
    const machine = await newMachine(h.client, 'stopped-machine', activityTask(activityArn));
    const execution = await start(h.client, machine, {});
    await reached(h.client, execution, 'ActivityScheduled');
    await h.client.send(new sfn.StopExecutionCommand({ executionArn: execution }));
    const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn }));
    expect(task.taskToken).toBeUndefined();
  });

  it('keeps a queued task while its activity is deleted, for whoever creates the activity again', async () => {
    const activityArn = await newActivity(h.client, 'reborn');
    const machine = await newMachine(h.client, 'reborn-machine', activityTask(activityArn));
    const execution = await start(h.client, machine, { kept: true });
    await reached(h.client, execution, 'ActivityScheduled');
    await h.client.send(new sfn.DeleteActivityCommand({ activityArn }));
    expect(await failure(h.client.send(new sfn.GetActivityTaskCommand({ activityArn })))).toBeInstanceOf(
      sfn.ActivityDoesNotExist,
    );
    await newActivity(h.client, 'reborn');
    const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn }));
    expect(task.input).toBe('{"kept":true}');
    await h.client.send(new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '1' }));
    expect(await settled(h.client, execution)).toMatchObject({ status: 'SUCCEEDED', output: '1' });
  });

  it('fails an execution whose activity does not exist with States.Runtime, nothing scheduled (AWS: test_activity_task_on_deleted)', async () => {
    const machine = await newMachine(h.client, 'missing-machine', activityTask(`${ACTIVITY_PREFIX}missing`));
    const execution = await start(h.client, machine, {});
    const done = await settled(h.client, execution);
    expect(done).toMatchObject({
      status: 'FAILED',
      error: 'States.Runtime',
      cause: `An error occurred while executing the state 'Work' (entered at the event id #2). The activity ${ACTIVITY_PREFIX}missing does not exist.`,
    });
    const events = await history(h.client, execution);
    expect(events.map((e) => e.type)).toEqual(['ExecutionStarted', 'TaskStateEntered', 'ExecutionFailed']);
  });
});

describe('activity timeouts (time scaled to 1/20)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await harness({ timeScale: 0.05, activityPollSeconds: 0.2 });
  });

  afterAll(async () => {
    await h.close();
  });

  it('times out a started task without heartbeats: ActivityTimedOut with States.HeartbeatTimeout', async () => {
    const activityArn = await newActivity(h.client, 'silent');
    const machine = await newMachine(
      h.client,
      'silent-machine',
      activityTask(activityArn, { HeartbeatSeconds: 2 }),
    );
    const execution = await start(h.client, machine, {});
    let task: sfn.GetActivityTaskOutput;
    do task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'mute' }));
    while (!task.taskToken);
    const done = await settled(h.client, execution);
    expect(done).toMatchObject({ status: 'FAILED', error: 'States.HeartbeatTimeout' });
    const events = await history(h.client, execution);
    expect(events.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'ActivityScheduled',
      'ActivityStarted',
      'ActivityTimedOut',
      'ExecutionFailed',
    ]);
    expect(events[4]?.activityTimedOutEventDetails).toEqual({ error: 'States.HeartbeatTimeout' });
    // too late: the task is gone
    expect(
      await failure(
        h.client.send(new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '{}' })),
      ),
    ).toBeInstanceOf(sfn.TaskTimedOut);
  });

  it('keeps a task whose worker sends heartbeats alive past HeartbeatSeconds', async () => {
    const activityArn = await newActivity(h.client, 'chatty');
    const machine = await newMachine(
      h.client,
      'chatty-machine',
      activityTask(activityArn, { HeartbeatSeconds: 10 }),
    );
    const execution = await start(h.client, machine, {});
    let task: sfn.GetActivityTaskOutput;
    do task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn }));
    while (!task.taskToken);
    // 900 ms of work, almost twice the heartbeat interval of 500 ms, with a heartbeat every 60 ms
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 60));
      await h.client.send(new sfn.SendTaskHeartbeatCommand({ taskToken: task.taskToken }));
    }
    await h.client.send(
      new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '{"alive":true}' }),
    );
    expect(await settled(h.client, execution)).toMatchObject({
      status: 'SUCCEEDED',
      output: '{"alive":true}',
    });
  });

  it('times out a task nobody takes: ActivityTimedOut with States.Timeout, and withdraws it', async () => {
    const activityArn = await newActivity(h.client, 'unattended');
    const machine = await newMachine(h.client, 'unattended-machine', {
      Work: {
        Type: 'Task',
        Resource: activityArn,
        TimeoutSeconds: 2,
        Catch: [{ ErrorEquals: ['States.Timeout'], Next: 'TimedOut' }],
        End: true,
      },
      TimedOut: { Type: 'Pass', Result: 'caught', End: true },
    });
    const execution = await start(h.client, machine, {});
    const done = await settled(h.client, execution);
    expect(done).toMatchObject({ status: 'SUCCEEDED', output: '"caught"' });
    const events = await history(h.client, execution);
    expect(events.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'ActivityScheduled',
      'ActivityTimedOut',
      'TaskStateExited',
      'PassStateEntered',
      'PassStateExited',
      'ExecutionSucceeded',
    ]);
    expect(events[3]?.activityTimedOutEventDetails).toEqual({ error: 'States.Timeout' });
    const task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn }));
    expect(task.taskToken).toBeUndefined();
  });

  it('times out a task a worker took but never answers at TimeoutSeconds: States.Timeout', async () => {
    const activityArn = await newActivity(h.client, 'slow');
    const machine = await newMachine(
      h.client,
      'slow-machine',
      activityTask(activityArn, { TimeoutSeconds: 4 }),
    );
    const execution = await start(h.client, machine, {});
    let task: sfn.GetActivityTaskOutput;
    do task = await h.client.send(new sfn.GetActivityTaskCommand({ activityArn }));
    while (!task.taskToken);
    const done = await settled(h.client, execution);
    expect(done).toMatchObject({ status: 'FAILED', error: 'States.Timeout' });
    const events = await history(h.client, execution);
    expect(events.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'ActivityScheduled',
      'ActivityStarted',
      'ActivityTimedOut',
      'ExecutionFailed',
    ]);
    expect(events[4]?.activityTimedOutEventDetails).toEqual({ error: 'States.Timeout' });
  });
});

describe('activities across an engine restart', () => {
  const dirs: string[] = [];

  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it('keeps activities, queued tasks and tokens of started tasks', async () => {
    const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-activities-'));
    dirs.push(storeDir);
    const before = await harness({ storeDir, activityPollSeconds: 0.2 });
    const activityArn = await newActivity(before.client, 'durable');
    const machine = await newMachine(before.client, 'durable-machine', activityTask(activityArn));
    const taken = await start(before.client, machine, { which: 'taken' });
    await reached(before.client, taken, 'ActivityScheduled');
    const held = await before.client.send(
      new sfn.GetActivityTaskCommand({ activityArn, workerName: 'before' }),
    );
    expect(held.input).toBe('{"which":"taken"}');
    const queued = await start(before.client, machine, { which: 'queued' });
    await reached(before.client, queued, 'ActivityScheduled');
    await before.close();

    const after = await harness({ storeDir, activityPollSeconds: 0.2 });
    try {
      const described = await after.client.send(new sfn.DescribeActivityCommand({ activityArn }));
      expect(described.name).toBe('durable');
      // the token handed out before the restart still answers its task
      await after.client.send(
        new sfn.SendTaskSuccessCommand({ taskToken: held.taskToken, output: '"from before"' }),
      );
      // the task nobody had taken is queued again
      let task: sfn.GetActivityTaskOutput;
      do task = await after.client.send(new sfn.GetActivityTaskCommand({ activityArn, workerName: 'after' }));
      while (!task.taskToken);
      expect(task.input).toBe('{"which":"queued"}');
      await after.client.send(
        new sfn.SendTaskSuccessCommand({ taskToken: task.taskToken, output: '"from after"' }),
      );
      expect(await settled(after.client, taken)).toMatchObject({
        status: 'SUCCEEDED',
        output: '"from before"',
      });
      expect(await settled(after.client, queued)).toMatchObject({
        status: 'SUCCEEDED',
        output: '"from after"',
      });
      // nothing delivered twice, nothing recorded twice
      expect(
        (await after.client.send(new sfn.GetActivityTaskCommand({ activityArn }))).taskToken,
      ).toBeUndefined();
      for (const [arn, worker] of [
        [taken, 'before'],
        [queued, 'after'],
      ] as const) {
        const events = await history(after.client, arn);
        expect(events.map((e) => e.type)).toEqual([
          'ExecutionStarted',
          'TaskStateEntered',
          'ActivityScheduled',
          'ActivityStarted',
          'ActivitySucceeded',
          'TaskStateExited',
          'ExecutionSucceeded',
        ]);
        expect(events[3]?.activityStartedEventDetails).toEqual({ workerName: worker });
      }
      const stored = fs.readdirSync(path.join(storeDir, 'executions'), { recursive: true, encoding: 'utf8' });
      const texts = stored
        .map((f) => path.join(storeDir, 'executions', f))
        .filter((f) => fs.statSync(f).isFile())
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('');
      expect(texts).not.toContain(held.taskToken);
      expect(texts).not.toContain(task.taskToken);
    } finally {
      await after.close();
    }
  });
});
