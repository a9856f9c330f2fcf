/**
 * The OpenAPI document passes Redocly's linter with its recommended rules (`redocly lint`, no
 * configuration), as `npm test` runs it: no errors, and no warning but the one a private package
 * cannot answer (`info-license`: the project declares no license).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../lib/launch/openapi.ts';
import { REPO } from '../e2e/cli.ts';

const exec = promisify(execFile);

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-openapi-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('redocly lint (recommended rules)', () => {
  it('passes on the OpenAPI document', async () => {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(openApiDocument(), null, 2));
    const run = await exec(join(REPO, 'node_modules/.bin/redocly'), ['lint', file, '--format=json'], {
      cwd: dir,
      env: {
        ...process.env,
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        NODE_NO_WARNINGS: '1',
      },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { code: number; stdout: string; stderr: string }) => error);
    const report = JSON.parse(run.stdout) as LintReport;
    const problems = report.problems.map(
      (p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`,
    );
    expect(problems.filter((p) => !p.startsWith('warn info-license '))).toEqual([]);
    expect('code' in run ? run.code : 0, run.stderr).toBe(0);
  }, 60_000);
});
