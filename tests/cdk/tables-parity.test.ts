/**
 * Auditors' queries work the same locally and on AWS only if the tables are the same: the tables
 * the local stack creates in dynalite (DescribeTable) against the tables the CDK stack synthesises
 * (CloudFormation), key for key and index for index.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { PlanPlatformStack } from '../../lib/cdk/plan-platform-stack.ts';
import { TABLES } from '../../lib/runtime/journal/tables.ts';
import { testApp } from './support.ts';

interface Shape {
  keys: string[];
  attributes: string[];
  indexes: Record<string, { keys: string[]; projection: string | undefined }>;
}

const keysOf = (schema: { AttributeName?: string; KeyType?: string }[] | undefined): string[] =>
  (schema ?? []).map((k) => `${k.KeyType}:${k.AttributeName}`);

function shapeOf(table: {
  KeySchema?: { AttributeName?: string; KeyType?: string }[];
  AttributeDefinitions?: { AttributeName?: string; AttributeType?: string }[];
  GlobalSecondaryIndexes?: {
    IndexName?: string;
    KeySchema?: { AttributeName?: string; KeyType?: string }[];
    Projection?: { ProjectionType?: string };
  }[];
}): Shape {
  return {
    keys: keysOf(table.KeySchema),
    attributes: (table.AttributeDefinitions ?? []).map((a) => `${a.AttributeName}:${a.AttributeType}`).sort(),
    indexes: Object.fromEntries(
      (table.GlobalSecondaryIndexes ?? []).map((index) => [
        index.IndexName as string,
        { keys: keysOf(index.KeySchema), projection: index.Projection?.ProjectionType },
      ]),
    ),
  };
}

let dir: string;
let local: LocalDataPlane;
let synthesised: Record<string, Shape>;

beforeAll(async () => {
  const stack = new PlanPlatformStack(testApp(), 'Platform', {
    platform: { sesSender: 'approvals@example.com' },
  });
  const resources = Template.fromStack(stack).findResources('AWS::DynamoDB::Table');
  synthesised = {};
  for (const [logicalId, resource] of Object.entries(resources)) {
    const id = TABLES.find((t) => logicalId.toLowerCase().includes(t.id))?.id;
    if (id) synthesised[id] = shapeOf((resource as { Properties: Parameters<typeof shapeOf>[0] }).Properties);
  }
  dir = await mkdtemp(join(tmpdir(), 'plangate-parity-'));
  local = await startLocalDataPlane({ dataDir: dir });
}, 60_000);

afterAll(async () => {
  await local?.close();
  await rm(dir, { recursive: true, force: true });
});

it('creates locally exactly the tables, keys and indexes the CDK stack deploys', async () => {
  expect(Object.keys(synthesised).sort()).toEqual(TABLES.map((t) => t.id).sort());
  for (const def of TABLES) {
    const described = await local.clients.dynamo.send(
      new DescribeTableCommand({ TableName: local.tableNames[def.id] }),
    );
    const localShape = shapeOf(described.Table ?? {});
    expect(localShape, def.id).toEqual(synthesised[def.id]);
  }
  expect(Object.keys(synthesised.events?.indexes ?? {}).length).toBeGreaterThan(0);
});
