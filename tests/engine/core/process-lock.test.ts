import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  acquireProcessLock,
  LockHeldError,
  processStart,
  readLock,
} from '../../../lib/engine/persistence/process-lock.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function lockFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-lock-'));
  dirs.push(dir);
  return path.join(dir, 'LOCK');
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

function record(pid: number, start: number | null): string {
  return `${JSON.stringify({ pid, start, token: `t${pid}-${start}`, holder: 'plangate serve', since: '2026-01-01T00:00:00.000Z' })}\n`;
}

describe('the store lock', () => {
  it('names a live holder, and is refused to a second holder', () => {
    const file = lockFile();
    const held = acquireProcessLock(file, { holder: 'plangate serve' });
    expect(readLock(file)).toMatchObject({
      pid: process.pid,
      start: processStart(process.pid),
      holder: 'plangate serve',
    });
    let refusal: unknown;
    try {
      acquireProcessLock(file, { holder: 'plangate run' });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(LockHeldError);
    expect((refusal as LockHeldError).message).toMatch(
      new RegExp(`^held by process ${process.pid} \\(plangate serve, since `),
    );
    held.release();
    expect(fs.existsSync(file)).toBe(false);
    // nothing but the lock is left behind
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });

  it('takes over a lock whose process is gone, and one whose pid now belongs to another process', () => {
    const file = lockFile();
    fs.writeFileSync(file, record(deadPid(), 12345));
    const first = acquireProcessLock(file, { holder: 'plangate serve' });
    expect(readLock(file)?.pid).toBe(process.pid);
    first.release();
    // this very pid, started at another time: the pid was reused
    fs.writeFileSync(file, record(process.ppid, (processStart(process.ppid) ?? 0) + 1));
    const second = acquireProcessLock(file, { holder: 'plangate serve' });
    expect(readLock(file)).toMatchObject({ pid: process.pid, holder: 'plangate serve' });
    second.release();
    // a bare pid, as earlier versions wrote
    fs.writeFileSync(file, `${deadPid()}\n`);
    acquireProcessLock(file, { holder: 'plangate serve' }).release();
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });

  it('keeps a lock whose process runs, with the same start time', () => {
    const file = lockFile();
    fs.writeFileSync(file, record(process.ppid, processStart(process.ppid)));
    expect(() => acquireProcessLock(file, { holder: 'plangate serve' })).toThrow(LockHeldError);
    expect(readLock(file)?.pid).toBe(process.ppid);
  });

  it('of 10 processes that find one stale lock at once, one takes it', async () => {
    const file = lockFile();
    fs.writeFileSync(file, record(deadPid(), 1));
    const script = `
      import { acquireProcessLock } from ${JSON.stringify(path.resolve('lib/engine/persistence/process-lock.ts'))};
      try { acquireProcessLock(${JSON.stringify(file)}, { holder: 'racer' }); process.stdout.write('held'); setInterval(() => {}, 1000); }
      catch (error) { process.stdout.write(error.name); }`;
    const children: ReturnType<typeof spawn>[] = [];
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        // the holder holds until every racer has answered (then it is ended)
        children.push(child);
        return new Promise<string>((resolve) => {
          child.stdout.once('data', (d: Buffer) => resolve(d.toString()));
          child.on('exit', () => resolve('exited without an answer'));
        });
      }),
    );
    for (const child of children) child.kill('SIGKILL');
    expect(outcomes.filter((o) => o === 'held')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'LockHeldError')).toHaveLength(9);
  }, 60_000);
});
