/**
 * GetExecutionHistory must not change when the engine changes how it stores histories: every
 * conformance case is played on an in-memory engine, on a durable engine, and read back by a
 * second durable engine on the same store (history rebuilt from the files alone); each full
 * history (with and without execution data) must equal the digest recorded from the engine
 * before the store format changed (history-golden.json).
 *
 * Re-record only for an intended change of the served history: UPDATE_HISTORY_GOLDEN=1 npx vitest run tests/engine/core/history-golden.test.ts
 */

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as sfn from '@aws-sdk/client-sfn';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../lib/engine/engine.ts';
import { CONFORMANCE_CASES } from '../../conformance-dir.ts';
import type { ConformanceCase } from '../../support/conformance.ts';

const CASES = CONFORMANCE_CASES;
const GOLDEN = path.join(import.meta.dirname, 'history-golden.json');
const ROLE = 'arn:aws:iam::111111111111:role/conformance';
const update = process.env.UPDATE_HISTORY_GOLDEN === '1';

/** A clock that ticks one millisecond per reading: timestamps are part of the digest and repeatable. */
function tickingClock(): () => number {
  let t = Date.UTC(2025, 0, 1);
  return () => ++t;
}

function engineFor(c: ConformanceCase, storeDir: string | undefined): Engine {
  return createEngine({
    storeDir,
    accountId: '111111111111',
    mockConfig: c.mockConfig,
    timeScale: 0,
    clock: tickingClock(),
    invokeResource: async (invocation) => {
      throw new Error(`resource ${invocation.resource} is not mocked for state '${invocation.stateName}'`);
    },
  });
}

async function history(engine: Engine, executionArn: string, includeExecutionData: boolean) {
  const events: sfn.HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await engine.getExecutionHistory({
      executionArn,
      maxResults: 1000,
      includeExecutionData,
      ...(nextToken ? { nextToken } : {}),
    });
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return events;
}

/** Random parts (generated names, task tokens) replaced, so a digest is repeatable. */
function normalized(value: unknown): string {
  return JSON.stringify(value)
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/pgt1\.[A-Za-z0-9_-]{43}/g, '<token>');
}

async function play(c: ConformanceCase, engine: Engine): Promise<string> {
  const { stateMachineArn } = await engine.createStateMachine({
    name: 'Case',
    definition: JSON.stringify(c.definition),
    roleArn: ROLE,
  });
  const { executionArn } = await engine.startExecution({
    stateMachineArn: `${stateMachineArn}#Default`,
    name: 'exec',
    input: JSON.stringify(c.input),
  });
  await engine.awaitExecution(String(executionArn));
  return digestOf(engine, String(executionArn));
}

async function digestOf(engine: Engine, executionArn: string): Promise<string> {
  const described = await engine.describeExecution({ executionArn });
  const full = await history(engine, executionArn, true);
  const bare = await history(engine, executionArn, false);
  const text = normalized({ status: described.status, output: described.output, full, bare });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('GetExecutionHistory of every conformance case', () => {
  it('is the recorded one in memory, durable, and rebuilt from the store by another engine', async () => {
    const cases: ConformanceCase[] = fs
      .readdirSync(CASES)
      .filter((f) => f.endsWith('.json') && !f.startsWith('_'))
      .sort()
      .map((f) => JSON.parse(fs.readFileSync(path.join(CASES, f), 'utf8')));
    const memory: Record<string, string> = {};
    const durable: Record<string, string> = {};
    const reread: Record<string, string> = {};
    for (const c of cases) {
      const inMemory = engineFor(c, undefined);
      memory[c.id] = await play(c, inMemory);
      await inMemory.close();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-golden-'));
      dirs.push(dir);
      const first = engineFor(c, dir);
      durable[c.id] = await play(c, first);
      await first.close();
      const second = engineFor(c, dir);
      reread[c.id] = await digestOf(second, 'arn:aws:states:us-east-1:111111111111:execution:Case:exec');
      await second.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    if (update) fs.writeFileSync(GOLDEN, `${JSON.stringify(memory, null, 1)}\n`);
    const golden = JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as Record<string, string>;
    expect(Object.keys(golden)).toHaveLength(cases.length);
    expect(memory).toEqual(golden);
    expect(durable).toEqual(golden);
    expect(reread).toEqual(golden);
  }, 120_000);
});
