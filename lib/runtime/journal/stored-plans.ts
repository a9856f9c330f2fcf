/**
 * The plans submitted, whole, by digest (the plans table): written once when a plan is launched,
 * read by the approval page, which shows every command of a gate from it (the view compiled into
 * the definition is cut to fit Step Functions' limits). A plan read back is trusted only when it
 * still hashes to the digest it was asked for: anything else is refused, never shown.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { canonicalJson, planDigest } from '../../plan/digest.ts';
import { type Plan, PlanSchema } from '../../plan/schema.ts';
import { queryItems } from './journal.ts';

/** UTF-16 units of canonical JSON per item: at most 3 UTF-8 bytes each, so an item stays under DynamoDB's 400 KB. */
export const PART_CHARACTERS = 100_000;
const PART_DIGITS = 6;

/** A stored plan that does not hash to the digest it is stored under: shown nowhere. */
export class StoredPlanMismatchError extends Error {
  constructor(
    readonly digest: string,
    readonly found: string,
  ) {
    super(
      `the plan stored for ${digest} hashes to ${found}: it was altered, so it is not shown (reject the gate and submit the plan again)`,
    );
    this.name = 'StoredPlanMismatchError';
  }
}

/**
 * Stores `plan` whole under its digest (`sha256:<hex>`), each part written once (a conditional
 * put, as the journal's): a part already there is the same plan's, submitted before, and stays.
 */
export async function storePlan(
  dynamo: DynamoDBDocumentClient,
  plansTable: string,
  plan: Plan,
): Promise<string> {
  const digest = `sha256:${planDigest(plan)}`;
  const text = canonicalJson(plan);
  for (let at = 0, part = 0; at < text.length || part === 0; part++) {
    let end = Math.min(text.length, at + PART_CHARACTERS);
    // Never between the two halves of a surrogate pair: each part must be valid UTF-8 on its own.
    if (end < text.length && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
    const item = {
      planDigest: digest,
      part: String(part).padStart(PART_DIGITS, '0'),
      text: text.slice(at, end),
    };
    try {
      await dynamo.send(
        new PutCommand({
          TableName: plansTable,
          Item: item,
          ConditionExpression: 'attribute_not_exists(planDigest)',
        }),
      );
    } catch (error) {
      // Stored before under this digest; a part that differs is refused when read (storedPlan).
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    at = end;
  }
  return digest;
}

/**
 * The plan stored under `digest`, checked: undefined when none is stored (a plan deployed as code,
 * or launched before this table existed); {@link StoredPlanMismatchError} when what is stored is
 * not the plan that digest names.
 */
export async function storedPlan(
  dynamo: DynamoDBDocumentClient,
  table: string,
  digest: string,
): Promise<Plan | undefined> {
  let text = '';
  let parts = 0;
  for await (const item of queryItems(dynamo, {
    TableName: table,
    KeyConditionExpression: 'planDigest = :d',
    ExpressionAttributeValues: { ':d': digest },
    ConsistentRead: true,
  })) {
    if (item.part !== String(parts).padStart(PART_DIGITS, '0'))
      throw new StoredPlanMismatchError(digest, 'parts out of order');
    text += String(item.text ?? '');
    parts += 1;
  }
  if (parts === 0) return undefined;
  let plan: Plan;
  try {
    plan = PlanSchema.parse(JSON.parse(text));
  } catch {
    throw new StoredPlanMismatchError(digest, 'no valid plan');
  }
  const found = `sha256:${planDigest(plan)}`;
  if (found !== digest) throw new StoredPlanMismatchError(digest, found);
  return plan;
}
