/**
 * What a request to an AWS JSON service asks IAM for: the action (`dynamodb:PutItem`) and the ARN
 * of every resource it touches, named from the X-Amz-Target header and the body as the service's
 * authorization does. A request whose resources cannot be named here (PartiQL statements, an
 * operation not listed) is not guessed at: it is refused.
 */

/** The AWS JSON services the simulator fronts, by the service name their signatures are scoped to. */
export const FRONTED_SERVICES = {
  dynamodb: { targetPrefix: 'DynamoDB_20120810.', actionPrefix: 'dynamodb', jsonVersion: '1.0' },
  events: { targetPrefix: 'AWSEvents.', actionPrefix: 'events', jsonVersion: '1.1' },
  secretsmanager: { targetPrefix: 'secretsmanager.', actionPrefix: 'secretsmanager', jsonVersion: '1.1' },
} as const;
export type FrontedService = keyof typeof FRONTED_SERVICES;

export function isFrontedService(service: string): service is FrontedService {
  return Object.hasOwn(FRONTED_SERVICES, service);
}

export interface ResourceRequest {
  readonly action: string;
  readonly resource: string;
}

export type NamedRequest =
  | { readonly ok: true; readonly operation: string; readonly requests: readonly ResourceRequest[] }
  | { readonly ok: false; readonly message: string };

export interface AccountScope {
  readonly region: string;
  readonly account: string;
  /** The full ARN of the secret a SecretId names (Secrets Manager authorizes against it). */
  readonly secretArnOf: (secretId: string) => string | undefined;
}

type Body = Readonly<Record<string, unknown>>;

export function nameRequest(
  service: FrontedService,
  target: string,
  body: Body,
  scope: AccountScope,
): NamedRequest {
  const { targetPrefix, actionPrefix } = FRONTED_SERVICES[service];
  if (!target.startsWith(targetPrefix))
    return { ok: false, message: `X-Amz-Target ${target || '(none)'} is not a ${service} operation` };
  const operation = target.slice(targetPrefix.length);
  const action = (op: string) => `${actionPrefix}:${op}`;
  const resources = RESOURCES[service](operation, body, scope);
  if (resources === undefined)
    return {
      ok: false,
      message: `the IAM simulator cannot name the resources of ${action(operation)}: the request is denied (fail closed)`,
    };
  return {
    ok: true,
    operation,
    requests: resources.map(({ operation: op, arn }) => ({ action: action(op ?? operation), resource: arn })),
  };
}

type Resources = (
  operation: string,
  body: Body,
  scope: AccountScope,
) => { operation?: string; arn: string }[] | undefined;

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** DynamoDB: the table (an index of a Query or Scan is its own resource); batches and transactions per item. */
const dynamodb: Resources = (operation, body, { region, account }) => {
  const table = (name: unknown, index?: unknown): string | undefined => {
    const n = text(name);
    if (!n) return undefined;
    const arn = n.startsWith('arn:') ? n : `arn:aws:dynamodb:${region}:${account}:table/${n}`;
    const i = text(index);
    return i ? `${arn}/index/${i}` : arn;
  };
  const single = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query', 'Scan', 'DescribeTable'];
  if (single.includes(operation)) {
    const arn = table(
      body.TableName,
      operation === 'Query' || operation === 'Scan' ? body.IndexName : undefined,
    );
    return arn ? [{ arn }] : undefined;
  }
  if (operation === 'BatchWriteItem' || operation === 'BatchGetItem') {
    const items = body.RequestItems;
    if (typeof items !== 'object' || items === null) return undefined;
    const arns = Object.keys(items).map((name) => table(name));
    return arns.every((a) => a !== undefined) ? arns.map((arn) => ({ arn: arn as string })) : undefined;
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const items = body.TransactItems;
    if (!Array.isArray(items)) return undefined;
    const kinds: Record<string, string> = {
      Put: 'PutItem',
      Update: 'UpdateItem',
      Delete: 'DeleteItem',
      ConditionCheck: 'ConditionCheckItem',
      Get: 'GetItem',
    };
    const out: { operation: string; arn: string }[] = [];
    for (const item of items as Record<string, { TableName?: unknown }>[]) {
      const [kind, op] = Object.entries(item)[0] ?? [];
      const arn = table(op?.TableName);
      const itemOperation = kind ? kinds[kind] : undefined;
      if (!arn || !itemOperation) return undefined;
      out.push({ operation: itemOperation, arn });
    }
    return out;
  }
  return undefined;
};

/** EventBridge: PutEvents on each entry's bus (the default bus when none is named). */
const events: Resources = (operation, body, { region, account }) => {
  if (operation !== 'PutEvents' || !Array.isArray(body.Entries)) return undefined;
  return (body.Entries as { EventBusName?: unknown }[]).map((entry) => {
    const bus = text(entry.EventBusName) ?? 'default';
    return { arn: bus.startsWith('arn:') ? bus : `arn:aws:events:${region}:${account}:event-bus/${bus}` };
  });
};

/** Secrets Manager: the secret's full ARN (or, for one that does not exist, the ARN its id would have). */
const secretsmanager: Resources = (operation, body, { region, account, secretArnOf }) => {
  if (operation !== 'GetSecretValue' && operation !== 'DescribeSecret') return undefined;
  const id = text(body.SecretId);
  if (!id) return undefined;
  const arn =
    secretArnOf(id) ??
    (id.startsWith('arn:') ? id : `arn:aws:secretsmanager:${region}:${account}:secret:${id}`);
  return [{ arn }];
};

const RESOURCES: Readonly<Record<FrontedService, Resources>> = { dynamodb, events, secretsmanager };
