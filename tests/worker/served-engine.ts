import * as sfn from '@aws-sdk/client-sfn';
import { afterAll, beforeAll } from 'vitest';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/index.ts';

/** The engine served on the Step Functions API for one test file, and an SDK client of it. */
export interface ServedEngine {
  readonly url: string;
  readonly client: sfn.SFNClient;
}

/**
 * Starts an in-memory engine in real seconds (worker tests are about timeouts) before the file's
 * tests and stops it after them; read the fields inside tests, once `beforeAll` has run.
 */
export function useServedEngine(): ServedEngine {
  let engine: Engine;
  let server: EngineServer;
  const served = {} as { url: string; client: sfn.SFNClient };
  beforeAll(async () => {
    engine = createEngine({ storeDir: undefined, invokeResource: createResourceInvoker(), timeScale: 1 });
    server = await startEngineServer({ engine });
    served.url = server.url;
    served.client = new sfn.SFNClient({
      endpoint: server.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    served.client.destroy();
    await server.close();
    await engine.close();
  });
  return served;
}
