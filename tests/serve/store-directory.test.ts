/** Where a workspace's store is: outside it, under the user's state directory, one per workspace. */
import { mkdir, mkdtemp } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultStoreDir, stateRoot, storePaths } from '../../lib/serve/store-directory.ts';

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
