/**
 * Every fixture under tests/fixtures/invalid is rejected by `plangate validate` with
 * exactly the located message recorded in its `.expected` file, and every example is accepted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli-harness.ts';

const INVALID = 'tests/fixtures/invalid';
const fixtures = readdirSync(INVALID).filter((f) => !f.endsWith('.expected'));
const examples = readdirSync('examples').filter((f) => /\.(md|ya?ml|json)$/.test(f));

describe('plangate validate on tests/fixtures/invalid', () => {
  it('has one fixture per check, each with its expected output', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(30);
    for (const fixture of fixtures) expect(readdirSync(INVALID)).toContain(`${fixture}.expected`);
  });

  it.each(fixtures)('rejects %s with the recorded located problems', async (fixture) => {
    const expected = readFileSync(`${INVALID}/${fixture}.expected`, 'utf8');
    const result = await runCli(['validate', `${INVALID}/${fixture}`]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(expected);
    // Every problem line is located: file:line:col, then severity and code.
    const problems = expected.split('\n').filter((l) => l.startsWith(INVALID));
    expect(problems.length).toBeGreaterThan(0);
    for (const line of problems) expect(line).toMatch(/^[^:]+:\d+:\d+ (error|warning) [a-z0-9-]+ \S/);
  });

  it('names the check in the fixture file name', () => {
    for (const fixture of fixtures) {
      const code = fixture.replace(/\.(md|ya?ml|json)$/, '');
      expect(readFileSync(`${INVALID}/${fixture}.expected`, 'utf8')).toContain(` error ${code} `);
    }
  });
});

describe('plangate validate on examples/', () => {
  it.each(examples)('accepts %s', async (example) => {
    const result = await runCli(['validate', `examples/${example}`]);
    expect(result.stdout).toMatch(
      new RegExp(
        `^✓ examples/${example.replace('.', '\\.')}: plan "[^"]+" v\\d+, \\d+ steps, digest sha256:[0-9a-f]{12}…\\n$`,
      ),
    );
    expect(result.code).toBe(0);
  });

  it('includes seed 004 examples as Markdown and at least two YAML/JSON examples', () => {
    expect(examples).toEqual(
      expect.arrayContaining([
        'fix-auth-timeout.md',
        'extract-config-module.md',
        'migrate-requests-to-httpx.md',
        'local-demo.yaml',
        'release-api.json',
      ]),
    );
  });
});
