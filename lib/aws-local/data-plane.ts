/**
 * The local data plane in one call: dynalite and the local event bus on loopback, the tables
 * created, and clients for both. `plangate run` adds the engine and the HTTP server around it.
 */
import { DEFAULT_TABLE_NAMES, ensureTables, type TableNames } from '../runtime/journal/tables.ts';
import { type LocalClients, localClients, localEnvironment } from './clients.ts';
import { type LocalDynamo, startLocalDynamo } from './dynamo.ts';
import { type LocalEventBus, startLocalEventBus } from './eventbus.ts';

export interface LocalDataPlaneProps {
  /** The `.plangate` directory; in memory (nothing kept) when omitted. */
  readonly dataDir?: string;
  /** @default DEFAULT_TABLE_NAMES */
  readonly tableNames?: TableNames;
  /** The embedded engine's endpoint, when it is already running. */
  readonly sfnEndpoint?: string;
}

export interface LocalDataPlane {
  readonly dynamo: LocalDynamo;
  readonly bus: LocalEventBus;
  readonly clients: LocalClients;
  readonly tableNames: TableNames;
  /** AWS_ENDPOINT_URL_* and dummy credentials, for handlers that build their own clients. */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

export async function startLocalDataPlane(props: LocalDataPlaneProps = {}): Promise<LocalDataPlane> {
  // The handlers run in this process on Node 20 on purpose: the SDK's notice about its Node 22
  // floor is noise here (unless the caller chose otherwise).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const dynamo = await startLocalDynamo({ dataDir: props.dataDir });
  const bus = await startLocalEventBus({ dataDir: props.dataDir });
  const endpoints = {
    dynamoEndpoint: dynamo.endpoint,
    eventsEndpoint: bus.endpoint,
    sfnEndpoint: props.sfnEndpoint,
  };
  const clients = localClients(endpoints);
  const tableNames = props.tableNames ?? DEFAULT_TABLE_NAMES;
  await ensureTables(clients.dynamo, tableNames);
  return {
    dynamo,
    bus,
    clients,
    tableNames,
    env: localEnvironment(endpoints),
    close: async () => {
      clients.destroy();
      await bus.close();
      await dynamo.close();
    },
  };
}
