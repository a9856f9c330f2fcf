/** Turns lib/runtime/journal/tables.ts's plain-data table definitions into CDK table settings. */
import {
  type Attribute,
  AttributeType,
  type GlobalSecondaryIndexProps,
  ProjectionType,
} from 'aws-cdk-lib/aws-dynamodb';
import type { KeyDefinition, TableDefinition } from '../runtime/journal/tables.ts';

function attribute(key: KeyDefinition): Attribute {
  return { name: key.name, type: key.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER };
}

/** The key schema, the GSIs (projecting everything, as local mode does) and the TTL attribute of `def`. */
export function tableShape(def: TableDefinition): {
  partitionKey: Attribute;
  sortKey?: Attribute;
  globalSecondaryIndexes: GlobalSecondaryIndexProps[];
  timeToLiveAttribute?: string;
} {
  return {
    partitionKey: attribute(def.partitionKey),
    sortKey: def.sortKey ? attribute(def.sortKey) : undefined,
    globalSecondaryIndexes: def.globalSecondaryIndexes.map((index) => ({
      indexName: index.indexName,
      partitionKey: attribute(index.partitionKey),
      ...(index.sortKey ? { sortKey: attribute(index.sortKey) } : {}),
      projectionType: ProjectionType.ALL,
    })),
    timeToLiveAttribute: def.timeToLiveAttribute,
  };
}
