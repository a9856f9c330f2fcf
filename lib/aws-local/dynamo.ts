/**
 * The local DynamoDB: dynalite (the DynamoDB API over LevelDB) on loopback, its data under
 * `<dataDir>/dynamodb`, so executions survive a restart of `plangate run`.
 */
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import dynalite from 'dynalite';
import { Level } from 'level';
import { closeServer, listenOnLoopback } from './listen.ts';

export interface LocalDynamoProps {
  /** The `.plangate` directory; data goes to `<dataDir>/dynamodb`. In memory when omitted. */
  readonly dataDir?: string;
  /** @default 0 (any free port) */
  readonly port?: number;
}

export interface LocalDynamo {
  /** e.g. `http://127.0.0.1:43123` */
  readonly endpoint: string;
  /** The LevelDB directory, when persistent. */
  readonly path?: string;
  close(): Promise<void>;
}

/** Another process holds the store's database (LevelDB allows one at a time). */
export class StoreBusyError extends Error {
  override readonly name = 'StoreBusyError';
}

export async function startLocalDynamo(props: LocalDynamoProps = {}): Promise<LocalDynamo> {
  const path = props.dataDir ? join(props.dataDir, 'dynamodb') : undefined;
  if (path) {
    await mkdir(path, { recursive: true });
    await checkNotHeld(path);
  }
  // Tables are usable at once: no CREATING delay to wait through.
  const server = dynalite({
    ...(path ? { path } : {}),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  const endpoint = await listenOnLoopback(server, props.port, { refuse: refuseAsDynamo });
  return { endpoint, path, close: () => closeServer(server) };
}

/** A refused request answered as DynamoDB answers an error (AWS JSON 1.0), before dynalite sees it. */
function refuseAsDynamo(res: ServerResponse, message: string): void {
  const body = JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException', message });
  res.writeHead(403, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}

/**
 * dynalite opens its LevelDB lazily and reports a lock held by another process as an uncaught
 * "Database is closed" on the first request: open it once here to say so plainly instead.
 */
async function checkNotHeld(path: string): Promise<void> {
  const db = new Level(path);
  try {
    await db.open();
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    if (cause?.code === 'LEVEL_LOCKED')
      throw new StoreBusyError(
        `another process (plangate serve, run or resume) holds the database at ${path}`,
      );
    throw error;
  } finally {
    await db.close();
  }
}
