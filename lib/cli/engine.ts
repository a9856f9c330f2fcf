/**
 * `plangate engine serve`: the embedded Step Functions engine's API on loopback, for
 * @aws-sdk/client-sfn or the AWS CLI with an endpoint override. Prints the endpoint URL as the
 * first line of stdout and serves until SIGTERM/SIGINT.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { startEngineServer } from '../engine/api/index.ts';
import { createEngine, type Durability } from '../engine/engine.ts';
import { createResourceInvoker, LambdaHandlerRegistry } from '../engine/resources/index.ts';
import { untilSignal } from './signals.ts';

export const usage = `Usage: plangate engine serve [options]

Serves the Step Functions API (AWS JSON 1.0) of plangate's embedded engine on 127.0.0.1.
The first line of output is the endpoint URL, e.g. for
  aws stepfunctions --endpoint-url <URL> list-state-machines
StartSyncExecution is sent to the host "sync-<host>", which 127.0.0.1 cannot take: turn the SDK's
host prefix off (boto3: Config(inject_host_prefix=False); @aws-sdk: disableHostPrefix: true).
It runs until SIGTERM or SIGINT, then closes cleanly; running executions resume on the next start.

Options:
  --port N                   port to listen on (default 0: any free port)
  --store DIR                durable store directory (default .plangate/engine)
  --memory                   keep everything in memory instead of a store directory
  --durability MODE          group (default): events are written before every task call,
                             task token and answer, and synced to disk in groups (a power
                             loss loses at most the last 20 ms); strict: synced (fdatasync)
                             before each of them (docs/engine-speed.md)
  --mock-config FILE         Step Functions Local MockConfigFile (JSON); start executions with
                             "<stateMachineArn>#<TestCase>" to use a test case
  --time-scale X             multiply Wait, retry and timeout durations (default 1; 0 = no waiting)
  --lambda NAME=MODULE#EXPORT  serve Lambda function NAME with the handler EXPORT of MODULE
                             (loaded on first invocation); repeatable
  --dynamodb-endpoint URL    DynamoDB endpoint for dynamodb:* tasks (e.g. the local DynamoDB)
  --events-endpoint URL      EventBridge endpoint for events:putEvents tasks
  --region REGION            region of ARNs and clients (default us-east-1)
  -h, --help                 show this help

Exit codes: 0 stopped by a signal, 1 could not start, 2 usage error.`;

interface ServeArgs {
  port: number;
  storeDir: string | undefined;
  durability: Durability;
  mockConfigFile?: string;
  timeScale: number;
  lambdas: { name: string; spec: string }[];
  dynamodbEndpoint?: string;
  eventsEndpoint?: string;
  region: string;
}

function parseServeArgs(argv: string[]): ServeArgs | string {
  const [subcommand, ...rest] = argv;
  if (subcommand !== 'serve')
    return subcommand === undefined ? 'missing subcommand "serve"' : `unknown subcommand "${subcommand}"`;
  let values: ReturnType<typeof parseOptions>['values'];
  try {
    values = parseOptions(rest).values;
  } catch (error) {
    return (error as Error).message;
  }
  const port = Number(values.port ?? '0');
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    return `--port must be an integer from 0 to 65535, not "${values.port}"`;
  const timeScale = Number(values['time-scale'] ?? '1');
  if (!Number.isFinite(timeScale) || timeScale < 0)
    return `--time-scale must be a number >= 0, not "${values['time-scale']}"`;
  if (values.memory && values.store !== undefined) return '--memory and --store exclude each other';
  const durability = values.durability ?? 'group';
  if (durability !== 'group' && durability !== 'strict')
    return `--durability must be "group" or "strict", not "${durability}"`;
  if (values.memory && values.durability !== undefined) return '--durability needs a store (not --memory)';
  const lambdas: ServeArgs['lambdas'] = [];
  for (const entry of values.lambda ?? []) {
    const match = /^([^=]+)=(.+)$/.exec(entry);
    if (!match?.[1] || !match[2]) return `--lambda must look like NAME=MODULE#EXPORT, not "${entry}"`;
    lambdas.push({ name: match[1], spec: match[2] });
  }
  for (const option of ['dynamodb-endpoint', 'events-endpoint'] as const) {
    const url = values[option];
    if (url !== undefined && !URL.canParse(url)) return `--${option} must be a URL, not "${url}"`;
  }
  return {
    port,
    storeDir: values.memory ? undefined : (values.store ?? '.plangate/engine'),
    durability,
    ...(values['mock-config'] ? { mockConfigFile: values['mock-config'] } : {}),
    timeScale,
    lambdas,
    ...(values['dynamodb-endpoint'] ? { dynamodbEndpoint: values['dynamodb-endpoint'] } : {}),
    ...(values['events-endpoint'] ? { eventsEndpoint: values['events-endpoint'] } : {}),
    region: values.region ?? 'us-east-1',
  };
}

function parseOptions(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      store: { type: 'string' },
      memory: { type: 'boolean' },
      durability: { type: 'string' },
      'mock-config': { type: 'string' },
      'time-scale': { type: 'string' },
      lambda: { type: 'string', multiple: true },
      'dynamodb-endpoint': { type: 'string' },
      'events-endpoint': { type: 'string' },
      region: { type: 'string' },
    },
  });
}

async function readMockConfig(file: string): Promise<object> {
  const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new Error('it must hold a JSON object');
  return parsed;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseServeArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`plangate engine: ${args}\n\n${usage}\n`);
    return 2;
  }
  let mockConfig: object | undefined;
  if (args.mockConfigFile) {
    try {
      mockConfig = await readMockConfig(args.mockConfigFile);
    } catch (error) {
      process.stderr.write(
        `plangate engine: cannot read --mock-config ${args.mockConfigFile}: ${(error as Error).message}\n`,
      );
      return 1;
    }
  }
  const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  const registry = new LambdaHandlerRegistry({ region: args.region });
  for (const { name, spec } of args.lambdas) registry.registerModule(name, spec);
  const invokeResource = createResourceInvoker({
    lambdaHandlers: registry,
    region: args.region,
    ...(args.dynamodbEndpoint
      ? {
          dynamodb: new DynamoDBClient({ endpoint: args.dynamodbEndpoint, region: args.region, credentials }),
        }
      : {}),
    ...(args.eventsEndpoint
      ? {
          eventBridge: new EventBridgeClient({
            endpoint: args.eventsEndpoint,
            region: args.region,
            credentials,
          }),
        }
      : {}),
  });
  let engine: ReturnType<typeof createEngine>;
  try {
    engine = createEngine({
      storeDir: args.storeDir,
      durability: args.durability,
      invokeResource,
      timeScale: args.timeScale,
      region: args.region,
      mockConfig,
    });
  } catch (error) {
    process.stderr.write(`plangate engine: cannot start the engine: ${(error as Error).message}\n`);
    return 1;
  }
  let server: Awaited<ReturnType<typeof startEngineServer>>;
  try {
    server = await startEngineServer({ engine, port: args.port });
  } catch (error) {
    await engine.close();
    process.stderr.write(
      `plangate engine: cannot listen on port ${args.port}: ${(error as Error).message}\n`,
    );
    return 1;
  }
  const stopped = untilSignal();
  process.stdout.write(`${server.url}\n`);
  process.stderr.write(
    `plangate engine: serving the Step Functions API (${args.storeDir ? `store ${args.storeDir}, durability ${args.durability}` : 'in memory'}` +
      `${args.lambdas.length ? `, Lambda functions ${args.lambdas.map((l) => l.name).join(', ')}` : ''}); stop with SIGTERM or Ctrl-C\n`,
  );
  const signal = await stopped;
  await server.close();
  await engine.close();
  process.stderr.write(`plangate engine: stopped (${signal})\n`);
  return 0;
}
