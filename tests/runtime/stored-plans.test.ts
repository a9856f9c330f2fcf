/**
 * The plans table (lib/runtime/journal/stored-plans.ts) on dynalite: a plan comes back exactly
 * as stored, in as many parts as it takes (a part never splits a surrogate pair), and what does
 * not hash to the digest it is read by is refused, never returned.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { planDigest } from '../../lib/plan/digest.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import {
  PART_CHARACTERS,
  StoredPlanMismatchError,
  storedPlan,
  storePlan,
} from '../../lib/runtime/journal/stored-plans.ts';

let dir: string;
let plane: LocalDataPlane;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-stored-plans-'));
  plane = await startLocalDataPlane({ dataDir: join(dir, 'data') });
}, 60_000);
afterAll(async () => {
  await plane?.close();
  await rm(dir, { recursive: true, force: true });
});

function planOf(command: string, id = 'stored'): Plan {
  return PlanSchema.parse({
    id,
    version: 1,
    objective: 'Print a long line',
    sizePolicy: { minSteps: 1 },
    steps: [{ id: 'print', description: 'Print it', tool: 'shell', args: { command } }],
  });
}

const table = () => plane.tableNames.plans;
/** Half a surrogate pair, alone: not encodable in UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('stored plans', () => {
  it('come back whole under their digest, however many parts they take', async () => {
    // 😀 is a surrogate pair; with one space more or less before it, one of the two plans puts a
    // part boundary between its halves, which a part must never split (DynamoDB stores UTF-8).
    for (const pad of [' ', '  ']) {
      const command = `echo${pad}'${'😀'.repeat(PART_CHARACTERS)}' # ${'a'.repeat(PART_CHARACTERS)}`;
      const plan = planOf(command, `multi-part-${pad.length}`);
      const digest = await storePlan(plane.clients.doc, table(), plan);
      expect(digest).toBe(`sha256:${planDigest(plan)}`);
      const parts = await plane.clients.doc.send(
        new QueryCommand({
          TableName: table(),
          KeyConditionExpression: 'planDigest = :d',
          ExpressionAttributeValues: { ':d': digest },
        }),
      );
      expect(parts.Items?.length).toBeGreaterThanOrEqual(3);
      for (const item of parts.Items ?? []) expect(String(item.text)).not.toMatch(LONE_SURROGATE);
      const back = await storedPlan(plane.clients.doc, table(), digest);
      expect(back?.steps[0]?.args).toEqual({ command });
      // Storing it again changes nothing.
      await storePlan(plane.clients.doc, table(), plan);
      expect(await storedPlan(plane.clients.doc, table(), digest)).toEqual(back);
    }
  });

  it('keep any text exactly (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }), async (text) => {
        const plan = planOf(`echo ${JSON.stringify(text)}`, `prop-${planDigest(planOf(text)).slice(0, 12)}`);
        const digest = await storePlan(plane.clients.doc, table(), plan);
        expect((await storedPlan(plane.clients.doc, table(), digest))?.steps[0]?.args).toEqual(
          plan.steps[0]?.args,
        );
      }),
      { numRuns: 5 },
    );
  });

  it('are not there for a digest never stored', async () => {
    expect(await storedPlan(plane.clients.doc, table(), `sha256:${'0'.repeat(64)}`)).toBeUndefined();
  });

  it('are refused when what is stored is not the plan the digest names', async () => {
    const plan = planOf('echo harmless', 'tampered');
    const digest = await storePlan(plane.clients.doc, table(), plan);
    const item = (text: string) => ({ planDigest: digest, part: '000000', text });
    const tampered = JSON.stringify(planOf('rm -rf ../x', 'tampered'));
    await plane.clients.doc.send(new PutCommand({ TableName: table(), Item: item(tampered) }));
    await expect(storedPlan(plane.clients.doc, table(), digest)).rejects.toThrow(StoredPlanMismatchError);
    // Not JSON, or not a plan: refused the same way.
    await plane.clients.doc.send(new PutCommand({ TableName: table(), Item: item('{"id":') }));
    await expect(storedPlan(plane.clients.doc, table(), digest)).rejects.toThrow(/it was altered/);
  });
});
