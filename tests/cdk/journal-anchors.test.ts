/**
 * Issue 29 on AWS: exactly the journal's writers may put events (no role may update or delete
 * one), and the chain's head is anchored where those writers cannot reach: a KMS signing key only
 * the anchor Lambda may use, and an Object Lock (compliance) bucket only it may write.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PlanPlatformStack } from '../../lib/cdk/plan-platform-stack.ts';
import { JOURNAL_WRITERS } from '../../lib/runtime/catalog.ts';
import { testApp } from './support.ts';

type Statement = {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
  Principal?: unknown;
};
type Resource = { Type: string; Properties: Record<string, unknown> };

let stack: PlanPlatformStack;
let resources: Record<string, Resource>;

beforeAll(() => {
  stack = new PlanPlatformStack(testApp(), 'Platform', {
    platform: {
      sesSender: 'approvals@example.com',
      planner: { model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
    },
  });
  resources = Template.fromStack(stack).toJSON().Resources;
});

const idOf = (construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never);
const actions = (s: Statement) => [s.Action].flat();

/** Every role's Allow statements, from the IAM policies attached to it (by the role's logical id). */
function allowsByRole(): Map<string, Statement[]> {
  const out = new Map<string, Statement[]>();
  for (const [id, r] of Object.entries(resources)) if (r.Type === 'AWS::IAM::Role') out.set(id, []);
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::IAM::Policy') continue;
    const statements = (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
    for (const role of r.Properties.Roles as { Ref: string }[])
      out.get(role.Ref)?.push(...statements.filter((s) => s.Effect === 'Allow'));
  }
  return out;
}

/** Whether a statement applies to `arn` (the resource as the template writes it, or a wildcard). */
const covers = (s: Statement, arn: unknown) =>
  [s.Resource].flat().some((r) => r === '*' || JSON.stringify(r) === JSON.stringify(arn));

describe('who may write the events table', () => {
  it('PutItem is allowed to the journal writers exactly; UpdateItem, DeleteItem and batch writes to no role', () => {
    const table = { 'Fn::GetAtt': [idOf(stack.platform.eventsTable.table), 'Arn'] };
    const writers = stack.platform.journalWriters;
    expect(writers.map((fn) => fn.handler).sort()).toEqual([...JOURNAL_WRITERS].sort());
    const expected = writers.map((fn) => idOf(fn.role)).sort();
    const putters: string[] = [];
    for (const [role, allows] of allowsByRole()) {
      const onTable = allows.filter((s) => covers(s, table));
      if (onTable.some((s) => actions(s).some((a) => a === 'dynamodb:PutItem' || a === 'dynamodb:*')))
        putters.push(role);
      const mutating = onTable
        .flatMap(actions)
        .filter((a) => /UpdateItem|DeleteItem|BatchWrite|PartiQL|dynamodb:\*/.test(a));
      expect(mutating, `${role} may mutate events`).toEqual([]);
    }
    expect(putters.sort()).toEqual(expected);
    // Not the join, the anchor, the plans' state machine roles.
    for (const fn of [stack.platform.functions.join, stack.platform.anchor])
      expect(putters).not.toContain(idOf(fn.role));
    expect(putters).not.toContain(idOf(stack.platform.runtimePlanRole));
  });

  it("the table's resource policy denies PutItem to every principal but the writers, and every mutation to all", () => {
    const table = resources[idOf(stack.platform.eventsTable.table)] as Resource;
    const statements = (table.Properties.ResourcePolicy as { PolicyDocument: { Statement: Statement[] } })
      .PolicyDocument.Statement;
    const putDeny = statements.find((s) => s.Effect === 'Deny' && actions(s).includes('dynamodb:PutItem'));
    expect(putDeny?.Principal).toEqual({ AWS: '*' });
    expect(putDeny?.Condition).toEqual({
      ArnNotEquals: {
        'aws:PrincipalArn': stack.platform.journalWriters.map((fn) => ({
          'Fn::GetAtt': [idOf(fn.role), 'Arn'],
        })),
      },
    });
    const mutationDeny = statements.find(
      (s) => s.Effect === 'Deny' && actions(s).includes('dynamodb:DeleteItem'),
    );
    expect(mutationDeny?.Condition).toBeUndefined();
    expect(actions(mutationDeny as Statement)).toEqual(
      expect.arrayContaining(['dynamodb:UpdateItem', 'dynamodb:BatchWriteItem']),
    );
  });
});

describe('where the journal is anchored', () => {
  it('a KMS ECC_NIST_P256 signing key that only the anchor role may use to sign', () => {
    const key = resources[idOf(stack.platform.anchors.key)] as Resource;
    expect(key.Properties).toMatchObject({ KeySpec: 'ECC_NIST_P256', KeyUsage: 'SIGN_VERIFY' });
    const statements = (key.Properties.KeyPolicy as { Statement: Statement[] }).Statement;
    const deny = statements.find((s) => s.Effect === 'Deny');
    expect(actions(deny as Statement)).toEqual(['kms:Sign']);
    expect(deny?.Condition).toEqual({
      ArnNotEquals: { 'aws:PrincipalArn': { 'Fn::GetAtt': [idOf(stack.platform.anchor.role), 'Arn'] } },
    });
    const keyArn = { 'Fn::GetAtt': [idOf(stack.platform.anchors.key), 'Arn'] };
    const signers = [...allowsByRole()]
      .filter(([, allows]) =>
        allows.some((s) => covers(s, keyArn) && actions(s).some((a) => a === 'kms:Sign' || a === 'kms:*')),
      )
      .map(([role]) => role);
    expect(signers).toEqual([idOf(stack.platform.anchor.role)]);
  });

  it('an S3 bucket with Object Lock in compliance mode, versioned, written only by the anchor role', () => {
    const bucket = resources[idOf(stack.platform.anchors.bucket)] as Resource;
    expect(bucket.Properties).toMatchObject({
      ObjectLockEnabled: true,
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: 'COMPLIANCE' } },
      },
      VersioningConfiguration: { Status: 'Enabled' },
    });
    const bucketPolicy = Object.values(resources).find((r) => r.Type === 'AWS::S3::BucketPolicy') as Resource;
    const deny = (bucketPolicy.Properties.PolicyDocument as { Statement: Statement[] }).Statement.find(
      (s) => s.Effect === 'Deny' && actions(s).includes('s3:PutObject'),
    );
    expect(deny?.Condition).toEqual({
      ArnNotEquals: { 'aws:PrincipalArn': { 'Fn::GetAtt': [idOf(stack.platform.anchor.role), 'Arn'] } },
    });
    const writers = [...allowsByRole()]
      .filter(([, allows]) => allows.some((s) => actions(s).some((a) => /^s3:(PutObject|\*)/.test(a))))
      .map(([role]) => role);
    expect(writers).toEqual([idOf(stack.platform.anchor.role)]);
  });

  it("feeds the anchor Lambda from the events table's stream, in batches", () => {
    const table = resources[idOf(stack.platform.eventsTable.table)] as Resource;
    expect(table.Properties.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
    const mapping = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping',
    ) as Resource;
    expect(mapping.Properties).toMatchObject({
      FunctionName: { Ref: idOf(stack.platform.anchor.function) },
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 10,
      StartingPosition: 'TRIM_HORIZON',
    });
  });
});
