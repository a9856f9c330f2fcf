import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../lib/cli/compile.ts';

describe('plangate compile', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it('writes the definition and the report, and prints the per-step cost', async () => {
    const out = await mkdtemp(join(tmpdir(), 'plangate-compile-'));
    dirs.push(out);
    const printed: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      printed.push(String(chunk));
      return true;
    });
    expect(await run(['examples/release-api.json', '--out', out])).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['release-api.asl.json', 'release-api.report.json']);
    const asl = JSON.parse(await readFile(join(out, 'release-api.asl.json'), 'utf8'));
    expect(asl.QueryLanguage).toBe('JSONata');
    expect(asl.StartAt).toBe('Start');
    expect(printed.join('')).toMatch(/\[\w[\w-]*\] 2 transitions, 10 events/);
  });

  it('exits 2 on usage errors and 1 on an invalid plan', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await run([])).toBe(2);
    expect(await run(['examples/release-api.json', '--bogus'])).toBe(2);
    const dir = await mkdtemp(join(tmpdir(), 'plangate-compile-'));
    dirs.push(dir);
    const bad = join(dir, 'bad.json');
    const plan = { id: 'bad', objective: 'x', steps: [{ id: 'a', description: 'A', dependsOn: ['zz'] }] };
    await writeFile(bad, JSON.stringify(plan));
    expect(await run([bad, '--out', join(dir, 'out')])).toBe(1);
    await expect(readdir(join(dir, 'out'))).rejects.toThrow();
  });
});
