/**
 * A working table of the harness (gates, joins, outputs in lib/runtime/journal/tables.ts): on-demand,
 * point-in-time recovery, items expiring by TTL once nothing can need them.
 */
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { TableDefinition } from '../runtime/journal/tables.ts';
import { tableShape } from './table-props.ts';

export interface HarnessTableProps {
  /** Keys, indexes and TTL attribute, from lib/runtime/journal/tables.ts. */
  readonly definition: TableDefinition;
  /**
   * What happens to the items when the stack is deleted (the executions that need them are gone too).
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Item-level access a harness Lambda can be given, by what it does with the table. */
export type ItemAccess = 'read' | 'write';

const ACTIONS: Readonly<Record<ItemAccess, readonly string[]>> = {
  read: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'],
  write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
};

export class HarnessTable extends Construct {
  public readonly table: Table;
  public readonly definition: TableDefinition;

  constructor(scope: Construct, id: string, props: HarnessTableProps) {
    super(scope, id);
    this.definition = props.definition;
    const shape = tableShape(props.definition);
    this.table = new Table(this, 'Table', {
      partitionKey: shape.partitionKey,
      ...(shape.sortKey ? { sortKey: shape.sortKey } : {}),
      ...(shape.timeToLiveAttribute ? { timeToLiveAttribute: shape.timeToLiveAttribute } : {}),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
    });
    for (const index of shape.globalSecondaryIndexes) this.table.addGlobalSecondaryIndex(index);
  }

  /** The table's ARN and each index's, named one by one (no wildcard). */
  get arns(): string[] {
    return [
      this.table.tableArn,
      ...this.definition.globalSecondaryIndexes.map((index) =>
        Stack.of(this).formatArn({
          service: 'dynamodb',
          resource: 'table',
          resourceName: `${this.table.tableName}/index/${index.indexName}`,
        }),
      ),
    ];
  }

  /** Grants item reads (table and indexes) and/or writes (table; never deletes: TTL removes items). */
  grantItems(grantee: IGrantable, ...access: ItemAccess[]): Grant {
    let grant = Grant.drop(grantee, 'no access requested');
    if (access.includes('read')) {
      grant = grant.combine(
        Grant.addToPrincipal({ grantee, actions: [...ACTIONS.read], resourceArns: this.arns }),
      );
    }
    if (access.includes('write')) {
      grant = grant.combine(
        Grant.addToPrincipal({ grantee, actions: [...ACTIONS.write], resourceArns: [this.table.tableArn] }),
      );
    }
    return grant;
  }
}
