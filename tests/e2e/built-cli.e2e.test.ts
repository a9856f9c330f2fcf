/**
 * The CLI as a global install runs it: built as `npm run build` builds it (tsc with
 * tsconfig.build.json, then the CLI bundled by scripts/bundle-cli.ts) and started with plain node,
 * no tsx. The local run proves the built engine loads the
 * built lambdas/ handler modules.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleCli } from '../../scripts/bundle-cli.ts';
import { REPO } from './cli.ts';

/** An installed package's root: the build in dist/, the shipped policies beside it. */
const PACKAGE = mkdtempSync(join(tmpdir(), 'plangate-dist-'));
const OUT = join(PACKAGE, 'dist');
const CLI = join(OUT, 'bin/plangate.js');

function plangate(args: readonly string[], input?: string) {
  return spawnSync(process.execPath, [CLI, ...args], {
    cwd: OUT,
    ...(input !== undefined ? { input } : {}),
    encoding: 'utf8',
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
    timeout: 60_000,
  });
}

describe('the built CLI (dist/)', () => {
  beforeAll(async () => {
    execFileSync(join(REPO, 'node_modules/.bin/tsc'), [
      '-p',
      join(REPO, 'tsconfig.build.json'),
      '--outDir',
      OUT,
    ]);
    await bundleCli(OUT);
    // Beside the build, as in an installed package: its dependencies in node_modules, and the
    // default policies (package.json `files`) at the package's root.
    symlinkSync(join(REPO, 'node_modules'), join(OUT, 'node_modules'));
    symlinkSync(join(REPO, 'policies'), join(PACKAGE, 'policies'));
  }, 120_000);

  it('is plain JavaScript that the package bin names, with a node shebang', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin.plangate).toBe('dist/bin/plangate.js');
    const bin = readFileSync(CLI, 'utf8');
    expect(bin.split('\n')[0]).toBe('#!/usr/bin/env node');
    // One bundle: the CLI does not load plangate's modules one file at a time.
    expect(bin).not.toMatch(/['"]\.\.\/lib\//);
    expect(existsSync(join(OUT, 'lambdas/step-runner.js'))).toBe(true);
  });

  it('is executable, as npm links it: started directly, by its shebang', () => {
    expect(statSync(CLI).mode & 0o111).toBe(0o111);
    const help = spawnSync(CLI, ['--help'], { cwd: OUT, encoding: 'utf8', timeout: 60_000 });
    expect(help.error).toBeUndefined();
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: plangate <command>');
  });

  it('answers --help and validates plans (exit 0 valid, 1 invalid with located problems)', () => {
    const help = plangate(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: plangate <command>');
    const valid = plangate(['validate', join(REPO, 'examples/local-demo.yaml')]);
    expect(valid.status, valid.stderr).toBe(0);
    const invalid = plangate(['validate', join(REPO, 'tests/fixtures/invalid/dependency-cycle.yaml')]);
    expect(invalid.status).toBe(1);
    expect(invalid.stdout + invalid.stderr).toMatch(/dependency-cycle\.yaml:\d+:\d+/);
  });

  it('runs the local demo to completion on the local stack', () => {
    // The demo writes files, so --approve leaves its gate to a person (README): this test types `approve`.
    const run = plangate(
      ['run', join(REPO, 'examples/local-demo.yaml'), '--approve', '--store', join(OUT, 'store')],
      'approve\n',
    );
    expect(run.stderr).toContain('--approve: a person must approve this plan gate');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('8/8 tasks completed. 0 failures.');
  }, 90_000);
});
