// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * Values are data (issue 28), through the real CLI: a step output filling an http URL stays in
 * its path segment; an output that does not fit its declared shape fails the step that produced
 * it, classified, before anything reads it; a person's value that does not fit is refused by
 * `plangate complete`.
 */
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CliRun, runPlan, storedEvents, workDir } from './cli.ts';

const seen: string[] = [];
const server = createServer((req, res) => {
  seen.push(req.url ?? '');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
});
let port = 0;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function planFile(dir: string, plan: unknown): Promise<string> {
  const path = join(dir, 'plan.yaml');
  await writeFile(path, stringify(plan));
  return path;
}

describe('values are data, through plangate run and plangate complete', { timeout: 120_000 }, () => {
  it('an output ../admin/wipe?confirm=yes in an http URL stays in its path segment; a .. value is refused', async () => {
    const cwd = await workDir();
    const url = (ref: string) => `http://127.0.0.1:${port}/api/releases/${ref}`;
    const plan = await planFile(cwd, {
      id: 'url-values',
      objective: 'Fetch a release by the id a step read',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'meta',
          description: 'Read the release id',
          tool: 'shell',
          args: { command: `printf 'i=../admin/wipe?confirm=yes\\ndots=..\\n' >> "$PLANGATE_OUTPUT"` },
          outputs: ['i', 'dots'],
          contract: { kind: 'command', command: 'true' },
        },
        {
          id: 'fetch',
          description: 'Fetch the release',
          tool: 'http',
          dependsOn: ['meta'],
          args: { method: 'GET', url: url('${steps.meta.i}') },
          contract: { kind: 'http', url: `${url('${steps.meta.i}')}?check=1` },
        },
        {
          id: 'fetch-dots',
          description: 'Fetch the release by the other id',
          tool: 'http',
          dependsOn: ['fetch'],
          critical: false,
          onFail: { retries: 0, escalation: 'skip' },
          args: { method: 'GET', url: url('${steps.meta.dots}') },
          contract: { kind: 'assert', expression: 'output.status = 200' },
        },
      ],
    });
    seen.length = 0;
    const run = runPlan(plan, cwd, ['--approve']);
    await run.exited;
    const events = await storedEvents(cwd, run.executionArn);
    expect(seen).toEqual([
      '/api/releases/..%2Fadmin%2Fwipe%3Fconfirm%3Dyes',
      '/api/releases/..%2Fadmin%2Fwipe%3Fconfirm%3Dyes?check=1',
    ]);
    expect(seen.some((path) => path.startsWith('/api/admin') || path === '/api/')).toBe(false);
    expect(events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'fetch')).toBeDefined();
    const refused = events.find((e) => e.event === 'TASK_FAILED' && e.task_id === 'fetch-dots');
    expect(refused?.details.error).toBe('Plangate.InvalidInput');
    expect(String(refused?.details.error_message)).toMatch(/steps\.fetch-dots\.args\.url: .*"\.\."/);
  });

  it('an output that does not fit its shape fails the step that produced it, classified, and nothing reads it', async () => {
    const cwd = await workDir();
    const plan = await planFile(cwd, {
      id: 'shaped-output',
      objective: 'Read a release number and report it',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'meta',
          description: 'Read the release number',
          tool: 'shell',
          args: { command: `printf 'n=42; touch M\\n' >> "$PLANGATE_OUTPUT"` },
          outputs: ['n'],
          outputShapes: { n: { matches: '[0-9]+' } },
          onFail: { retries: 0, escalation: 'abort' },
          contract: { kind: 'command', command: 'true' },
        },
        {
          id: 'report',
          description: 'Report the release number',
          tool: 'echo',
          dependsOn: ['meta'],
          args: { message: 'release ${steps.meta.n}' },
          contract: { kind: 'assert', expression: 'true' },
        },
      ],
    });
    const run = runPlan(plan, cwd, ['--approve']);
    expect(await run.exited, run.stderr).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    const failed = events.find((e) => e.event === 'TASK_FAILED' && e.task_id === 'meta');
    expect(String(failed?.details.error_message)).toMatch(
      /^OutputShapeMismatch: steps\.meta\.outputs\.n: output "n" does not fit its shape: .*matches \/\[0-9\]\+\//,
    );
    // The value is not in what the failure says (it may be a secret).
    for (const e of events.filter((e) =>
      ['TASK_FAILED', 'FAILURE_DETECTED', 'RECOVERY_ESCALATION'].includes(e.event),
    ))
      expect(JSON.stringify(e.details)).not.toContain('42; touch M');
    expect(
      events.find((e) => e.event === 'FAILURE_CLASSIFIED' && e.task_id === 'meta')?.details.failure_type,
    ).toBe('logic');
    expect(events.some((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'meta')).toBe(false);
    expect(events.some((e) => e.event === 'TASK_STARTED' && e.task_id === 'report')).toBe(false);
  });

  it('plangate complete refuses a value that does not fit its shape, naming the output and the shape, and records it once it fits', async () => {
    const cwd = await workDir();
    const plan = await planFile(cwd, {
      id: 'shaped-human',
      objective: 'Choose the next version and announce it',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'pick',
          description: 'Choose the next version',
          requiresHuman: true,
          outputs: ['version'],
          outputShapes: { version: { matches: '[0-9]+\\.[0-9]+\\.[0-9]+' } },
          contract: { kind: 'assert', expression: 'true' },
        },
        {
          id: 'announce',
          description: 'Announce the version',
          tool: 'echo',
          dependsOn: ['pick'],
          args: { message: 'next: ${steps.pick.version}' },
          contract: { kind: 'assert', expression: 'true' },
        },
      ],
    });
    const run = runPlan(plan, cwd, ['--approve']);
    await run.untilEvent('TASK_STARTED', 'pick');
    const arn = run.executionArn;
    const value = '1.2; rm -rf x';
    const refused = new CliRun(['complete', arn, 'pick', '--value', `version=${value}`], cwd);
    expect(await refused.exited, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('not recorded');
    expect(refused.stderr).toContain('output "version" does not fit its shape');
    expect(refused.stderr).toContain('matches /[0-9]+\\.[0-9]+\\.[0-9]+/');
    expect(refused.stderr).not.toContain(value);
    const done = new CliRun(['complete', arn, 'pick', '--value', 'version=1.2.0'], cwd);
    expect(await done.exited, done.stderr).toBe(0);
    expect(await run.exited, run.stderr).toBe(0);
    const events = await storedEvents(cwd, arn);
    expect(
      events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'announce')?.details.result,
    ).toMatchObject({
      message: 'next: 1.2.0',
    });
  });
});
