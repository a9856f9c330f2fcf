/** Where a workspace's store is: outside it, under the user's state directory, one per workspace. */
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processStart } from '../../lib/engine/persistence/process-lock.ts';
import {
  defaultStoreDir,
  liveSession,
  stateRoot,
  storePaths,
  writeSession,
} from '../../lib/serve/store-directory.ts';

const saved = process.env.XDG_STATE_HOME;
afterEach(() => {
  if (saved === undefined) delete process.env.XDG_STATE_HOME;
  else process.env.XDG_STATE_HOME = saved;
});

describe('defaultStoreDir', () => {
  it('is outside the workspace, the same for the same directory and another for another', async () => {
    const a = await mkdtemp(join(tmpdir(), 'plangate-ws-'));
    const b = await mkdtemp(join(tmpdir(), 'plangate-ws-'));
    delete process.env.XDG_STATE_HOME;
    expect(stateRoot()).toBe(join(homedir(), '.local/state/plangate'));
    expect(defaultStoreDir(a).startsWith(join(stateRoot(), 'stores'))).toBe(true);
    expect(defaultStoreDir(a).startsWith(a)).toBe(false);
    expect(defaultStoreDir(join(a, '.'))).toBe(defaultStoreDir(a));
    expect(defaultStoreDir(b)).not.toBe(defaultStoreDir(a));
    process.env.XDG_STATE_HOME = '/var/state';
    expect(defaultStoreDir(a).startsWith('/var/state/plangate/stores/')).toBe(true);
    // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
    process.env.XDG_STATE_HOME = 'state';
    expect(stateRoot()).toBe(join(homedir(), '.local/state/plangate'));
  });

  it('keeps finding a .plangate store made in the workspace before stores moved out', async () => {
    const ws = await mkdtemp(join(tmpdir(), 'plangate-ws-'));
    // A directory named .plangate that is no store (no engine/) is not one.
    await mkdir(join(ws, '.plangate'));
    expect(defaultStoreDir(ws)).not.toBe(join(ws, '.plangate'));
    await mkdir(join(ws, '.plangate', 'engine'));
    expect(defaultStoreDir(ws)).toBe(join(ws, '.plangate'));
    expect(storePaths(join(ws, '.plangate')).linkKey).toBe(join(ws, '.plangate', 'approval-signing.key'));
  });
});

describe('liveSession', () => {
  it('is the session of a running process, and not one whose pid another process has now', async () => {
    const paths = storePaths(await mkdtemp(join(tmpdir(), 'plangate-session-')));
    const endpoints = {
      startedAt: '2026-01-01T00:00:00.000Z',
      dynamoEndpoint: 'http://127.0.0.1:1',
      eventsEndpoint: 'http://127.0.0.1:2',
      sfnEndpoint: 'http://127.0.0.1:3',
      approvalUrl: 'http://127.0.0.1:4',
    };
    await writeSession(paths, { pid: process.ppid, ...endpoints });
    expect((await liveSession(paths))?.pid).toBe(process.ppid);
    // the same pid, started at another time: a killed session whose pid was reused
    const text = JSON.parse(await readFile(paths.session, 'utf8'));
    await writeFile(
      paths.session,
      JSON.stringify({ ...text, processStart: (processStart(process.ppid) ?? 0) + 1 }),
    );
    expect(await liveSession(paths)).toBeUndefined();
  });
});
