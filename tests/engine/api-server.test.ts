import { request } from 'node:http';
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  ExecutionDoesNotExist,
  InvalidDefinition,
  SFNClient,
  StartExecutionCommand,
  ValidateStateMachineDefinitionCommand,
} from '@aws-sdk/client-sfn';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dispatch,
  type EngineServer,
  MAX_REQUEST_BYTES,
  startEngineServer,
} from '../../lib/engine/api/index.ts';
import { SfnServiceError, type StepFunctionsEngine } from '../../lib/engine/types.ts';
import { validateDefinition } from '../../lib/engine/validate/index.ts';

const START = new Date('2030-01-02T03:04:05.678Z');

/** A stand-in with a few operations: enough to test the wire protocol, not the interpreter. */
function minimalEngine(): StepFunctionsEngine {
  const engine = {
    async createStateMachine(input: { name: string; definition: string }) {
      const problems = validateDefinition(input.definition);
      if (problems.length > 0) {
        throw new SfnServiceError(
          'InvalidDefinition',
          `Invalid State Machine Definition: '${problems.map((p) => `${p.code}: ${p.message} at ${p.location}`).join(', ')}'`,
        );
      }
      return {
        stateMachineArn: `arn:aws:states:us-east-1:123456789012:stateMachine:${input.name}`,
        creationDate: START,
      };
    },
    async validateStateMachineDefinition(input: { definition: string }) {
      const diagnostics = validateDefinition(input.definition).map((p) => ({
        severity: 'ERROR',
        code: p.code,
        message: p.message,
        location: p.location,
      }));
      return { result: diagnostics.length ? 'FAIL' : 'OK', diagnostics, truncated: false };
    },
    async startExecution(input: { stateMachineArn: string; name?: string }) {
      return {
        executionArn: `${input.stateMachineArn.replace(':stateMachine:', ':execution:')}:${input.name ?? 'generated'}`,
        startDate: START,
      };
    },
    async describeExecution(input: { executionArn: string }) {
      if (!input.executionArn.endsWith(':known'))
        throw new SfnServiceError(
          'ExecutionDoesNotExist',
          `Execution Does Not Exist: '${input.executionArn}'`,
        );
      return {
        executionArn: input.executionArn,
        stateMachineArn: 'arn:aws:states:us-east-1:123456789012:stateMachine:M',
        status: 'RUNNING',
        startDate: START,
        input: '{}',
        $metadata: {},
      };
    },
    async listStateMachines() {
      return { stateMachines: [] };
    },
    async listExecutions() {
      return { executions: [] };
    },
    async sendTaskHeartbeat() {
      return {};
    },
    async stopExecution(): Promise<never> {
      throw new Error('internal detail that must not leak');
    },
  };
  return engine as unknown as StepFunctionsEngine;
}

describe('Step Functions API server', () => {
  let server: EngineServer;
  let client: SFNClient;

  beforeAll(async () => {
    server = await startEngineServer({ engine: minimalEngine() });
    client = new SFNClient({
      endpoint: server.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
    });
  });

  afterAll(async () => {
    client.destroy();
    await server.close();
  });

  function raw(
    body: string | Buffer,
    headers: Record<string, string> = {},
    method = 'POST',
  ): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
    return new Promise((resolve, reject) => {
      const req = request(
        server.url,
        { method, headers: { 'content-type': 'application/x-amz-json-1.0', ...headers } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('answers only its own names: a foreign Host or Origin is AccessDeniedException (403), sync- is its own', async () => {
    const port = new URL(server.url).port;
    const target = { 'x-amz-target': 'AWSStepFunctions.ValidateStateMachineDefinition' };
    const body = JSON.stringify({ definition: '{}' });
    for (const host of [`localhost:${port}`, `sync-127.0.0.1:${port}`, `SYNC-LOCALHOST:${port}`])
      expect((await raw(body, { ...target, host })).status, host).toBe(200);
    for (const headers of <Record<string, string>[]>[
      { host: `evil.example:${port}` },
      { host: `sync-evil.example:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://evil.example:${port}` },
    ]) {
      const refused = await raw(body, { ...target, ...headers });
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ __type: 'AccessDeniedException' });
      expect(refused.headers['x-amzn-errortype']).toBe('AccessDeniedException');
    }
  });

  it('listens on loopback with an ephemeral port', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('serves the SDK unchanged: timestamps as epoch seconds come back as Dates', async () => {
    const created = await client.send(
      new CreateStateMachineCommand({
        name: 'M',
        definition: JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', End: true } } }),
        roleArn: 'arn:aws:iam::123456789012:role/r',
      }),
    );
    expect(created.stateMachineArn).toBe('arn:aws:states:us-east-1:123456789012:stateMachine:M');
    expect(created.creationDate).toEqual(START);
    const started = await client.send(
      new StartExecutionCommand({ stateMachineArn: created.stateMachineArn, name: 'known' }),
    );
    const described = await client.send(new DescribeExecutionCommand({ executionArn: started.executionArn }));
    expect(described).toMatchObject({ status: 'RUNNING', startDate: START, input: '{}' });
  });

  it('turns engine errors into modeled SDK exceptions', async () => {
    const missing = await client
      .send(
        new DescribeExecutionCommand({
          executionArn: 'arn:aws:states:us-east-1:123456789012:execution:M:nope',
        }),
      )
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ExecutionDoesNotExist);
    expect((missing as Error).message).toContain(':nope');
    const invalid = await client
      .send(
        new CreateStateMachineCommand({
          name: 'Bad',
          definition: '{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}',
          roleArn: 'r',
        }),
      )
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidDefinition);
    expect((invalid as Error).message).toContain('/States/A/Next');
  });

  it('returns located diagnostics from ValidateStateMachineDefinition', async () => {
    const result = await client.send(
      new ValidateStateMachineDefinitionCommand({
        definition: '{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Z"}}}',
      }),
    );
    expect(result.result).toBe('FAIL');
    expect(result.diagnostics?.map((d) => d.location)).toContain('/States/A/Next');
  });

  it('answers on any host name, so a client that adds the sync- prefix can be pointed at it', async () => {
    const reply = await raw('{}', {
      'x-amz-target': 'AWSStepFunctions.ListStateMachines',
      host: `sync-localhost:${new URL(server.url).port}`,
    });
    expect(reply).toMatchObject({ status: 200, body: { stateMachines: [] } });
  });

  it('answers an unknown operation with UnknownOperationException', async () => {
    const reply = await raw('{}', { 'x-amz-target': 'AWSStepFunctions.LaunchRockets' });
    expect(reply.status).toBe(400);
    expect(reply.body.__type).toBe('UnknownOperationException');
    expect(reply.headers['x-amzn-errortype']).toBe('UnknownOperationException');
    expect((await raw('{}')).body.__type).toBe('UnknownOperationException');
    expect((await raw('', {}, 'GET')).body.__type).toBe('UnknownOperationException');
    // An operation the engine object does not implement is unknown too.
    expect(
      (await raw('{"stateMachineArn":"x"}', { 'x-amz-target': 'AWSStepFunctions.DeleteStateMachine' })).body
        .__type,
    ).toBe('UnknownOperationException');
  });

  it('answers malformed JSON and wrong member types with SerializationException', async () => {
    const target = { 'x-amz-target': 'AWSStepFunctions.StartExecution' };
    expect((await raw('{"stateMachineArn":', target)).body.__type).toBe('SerializationException');
    expect((await raw('[1,2]', target)).body.__type).toBe('SerializationException');
    const wrongType = await raw('{"stateMachineArn": 42}', target);
    expect(wrongType).toMatchObject({ status: 400, body: { __type: 'SerializationException' } });
  });

  it('answers missing required members and out-of-range values with ValidationException in AWS wording', async () => {
    const reply = await raw('{}', { 'x-amz-target': 'AWSStepFunctions.CreateStateMachine' });
    expect(reply.body).toEqual({
      __type: 'ValidationException',
      message:
        "3 validation errors detected: Value null at 'name' failed to satisfy constraint: Member must not be null; Value null at 'definition' failed to satisfy constraint: Member must not be null; Value null at 'roleArn' failed to satisfy constraint: Member must not be null",
    });
    const range = await raw('{"maxResults": 5000}', { 'x-amz-target': 'AWSStepFunctions.ListStateMachines' });
    expect(range.body).toEqual({
      __type: 'ValidationException',
      message:
        "1 validation error detected: Value '5000' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 1000",
    });
  });

  it('answers length and enum violations of the service model with ValidationException, naming no secret', async () => {
    const start = { 'x-amz-target': 'AWSStepFunctions.StartExecution' };
    const longName = await raw(JSON.stringify({ stateMachineArn: 'arn', name: 'n'.repeat(81) }), start);
    expect(longName.body).toEqual({
      __type: 'ValidationException',
      message:
        "1 validation error detected: Value at 'name' failed to satisfy constraint: Member must have length less than or equal to 80",
    });
    const token = 'secret'.repeat(400);
    const longToken = await raw(JSON.stringify({ taskToken: token }), {
      'x-amz-target': 'AWSStepFunctions.SendTaskHeartbeat',
    });
    expect(longToken.body.__type).toBe('ValidationException');
    expect(JSON.stringify(longToken.body)).not.toContain('secret');
    const emptyToken = await raw('{"taskToken": ""}', {
      'x-amz-target': 'AWSStepFunctions.SendTaskHeartbeat',
    });
    expect(emptyToken.body.message).toContain('Member must have length greater than or equal to 1');
    const status = await raw('{"statusFilter": "DONE"}', {
      'x-amz-target': 'AWSStepFunctions.ListExecutions',
    });
    expect(status.body).toEqual({
      __type: 'ValidationException',
      message:
        "1 validation error detected: Value 'DONE' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, PENDING_REDRIVE]",
    });
  });

  it('refuses oversized bodies without reading them into the engine', async () => {
    const huge = Buffer.alloc(MAX_REQUEST_BYTES + 10, 0x20);
    const reply = await raw(huge, { 'x-amz-target': 'AWSStepFunctions.StartExecution' });
    expect(reply.status).toBe(413);
    expect(reply.body.__type).toBe('ValidationException');
  });

  it('hides internal failures behind InternalFailure and keeps serving', async () => {
    const reply = await raw('{"executionArn":"x"}', { 'x-amz-target': 'AWSStepFunctions.StopExecution' });
    expect(reply).toMatchObject({ status: 500, body: { __type: 'InternalFailure' } });
    expect(JSON.stringify(reply.body)).not.toContain('internal detail');
    expect(
      (await raw('{"executionArn":"a:known"}', { 'x-amz-target': 'AWSStepFunctions.DescribeExecution' }))
        .status,
    ).toBe(200);
  });

  it('answers every fuzzed request with a status and a JSON body, never a crash', async () => {
    const engine = minimalEngine();
    const targets = fc.oneof(
      fc
        .constantFrom(
          'StartExecution',
          'CreateStateMachine',
          'DescribeExecution',
          'ListStateMachines',
          'ValidateStateMachineDefinition',
          'Nope',
        )
        .map((op) => `AWSStepFunctions.${op}`),
      fc.string(),
    );
    const bodies = fc.oneof(
      fc.string(),
      fc.json(),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(targets, bodies, async (target, body) => {
        const reply = await dispatch(engine, target, body);
        expect(reply.status === 200 || typeof reply.body.__type === 'string').toBe(true);
        expect(() => JSON.stringify(reply.body)).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });

  it('dispatch never throws, whatever the bytes', async () => {
    const engine = minimalEngine();
    for (const body of [
      '',
      'null',
      '"x"',
      '{"input":{}}',
      '\u0000\u0001',
      '{"stateMachineArn":"a","name":["x"]}',
    ]) {
      const reply = await dispatch(engine, 'AWSStepFunctions.StartExecution', body);
      expect(reply.status).toBeGreaterThanOrEqual(200);
    }
  });
});
