import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { peekStoreHistories } from '../../../lib/engine/persistence/store.ts';

const CHILD = path.join(import.meta.dirname, 'durable-child.ts');

const dirs: string[] = [];

function workDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-durable-'));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** The engine runs in this very process (node with the tsx loader, no wrapper), so kill -9 kills the engine. */
function startChild(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

async function waitFor(check: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Types of the events stored so far, as a restarted engine would read them (the engine may be running). */
function storedTypes(store: string): string[] {
  return [...peekStoreHistories(store).values()].flat().map((e) => e.type);
}

/** The raw bytes of every file in the store (to show what never reaches the disk). */
function storedHistory(store: string): string {
  if (!fs.existsSync(store)) return '';
  return fs
    .readdirSync(store, { recursive: true })
    .map((f) => path.join(store, String(f)))
    .filter((f) => fs.statSync(f).isFile())
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('');
}

async function runToEnd(
  args: string[],
): Promise<{ described: { status: string; output?: string }; history: Array<Record<string, unknown>> }> {
  const child = startChild(args);
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  let err = '';
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const code = await new Promise((r) => child.on('exit', r));
  if (code !== 0) throw new Error(`child failed (${code}): ${err}`);
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}');
}

async function kill9(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.on('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe('durability across kill -9', () => {
  it('resumes a waiting task token: no completed task runs again, no event lost or duplicated', async () => {
    const dir = workDir();
    const store = path.join(dir, 'store');
    const definition = path.join(dir, 'definition.json');
    fs.writeFileSync(
      definition,
      JSON.stringify({
        StartAt: 'First',
        States: {
          First: {
            Type: 'Task',
            Resource: 'arn:aws:lambda:us-east-1:123456789012:function:first',
            Next: 'Gate',
          },
          Gate: {
            Type: 'Task',
            Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
            Parameters: { FunctionName: 'gate', Payload: { 'token.$': '$$.Task.Token' } },
            ResultPath: '$.decision',
            Next: 'Last',
          },
          Last: {
            Type: 'Task',
            Resource: 'arn:aws:lambda:us-east-1:123456789012:function:last',
            ResultPath: '$.last',
            End: true,
          },
        },
      }),
    );
    const child = startChild([store, dir, 'start', definition]);
    await waitFor(
      () => fs.existsSync(path.join(dir, 'token.txt')) && storedTypes(store).includes('TaskSubmitted'),
    );
    await kill9(child);

    const token = fs.readFileSync(path.join(dir, 'token.txt'), 'utf8');
    expect(storedHistory(store)).not.toContain(token);

    const { described, history } = await runToEnd([store, dir, 'resume']);
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(String(described.output))).toEqual({
      from: 'First',
      decision: { approved: true },
      last: { from: 'Last' },
    });
    expect(fs.readFileSync(path.join(dir, 'invocations.log'), 'utf8').trim().split('\n')).toEqual([
      'First',
      'Gate',
      'Last',
    ]);
    expect(history.map((e) => e.id)).toEqual(history.map((_, i) => i + 1));
    expect(history.map((e) => e.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionSucceeded',
      'TaskStateExited',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSubmitted',
      'TaskSucceeded',
      'TaskStateExited',
      'TaskStateEntered',
      'LambdaFunctionScheduled',
      'LambdaFunctionStarted',
      'LambdaFunctionSucceeded',
      'TaskStateExited',
      'ExecutionSucceeded',
    ]);
  });

  it('keeps a Wait state deadline across a restart', async () => {
    const dir = workDir();
    const store = path.join(dir, 'store');
    const definition = path.join(dir, 'definition.json');
    fs.writeFileSync(
      definition,
      JSON.stringify({
        StartAt: 'Pause',
        States: {
          Pause: { Type: 'Wait', Seconds: 5, Next: 'Done' },
          Done: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:done', End: true },
        },
      }),
    );
    const child = startChild([store, dir, 'start', definition]);
    await waitFor(() => storedTypes(store).includes('WaitStateEntered'));
    await kill9(child);
    await new Promise((r) => setTimeout(r, 500));
    const resumed = Date.now();
    const { described, history } = await runToEnd([store, dir, 'resume']);
    expect(described.status).toBe('SUCCEEDED');
    const at = (type: string) => new Date(String(history.find((e) => e.type === type)?.timestamp)).getTime();
    expect(at('WaitStateExited') - at('WaitStateEntered')).toBeGreaterThanOrEqual(4990);
    // The deadline set before the kill, not a new wait from the restart: a wait started over would
    // end 5 s after the resumed engine started, however long its start took on a busy machine.
    expect(at('WaitStateExited')).toBeLessThan(resumed + 5000);
    expect(history.filter((e) => e.type === 'WaitStateEntered')).toHaveLength(1);
  });
});
