/**
 * Bad input gets a clear, located error and never a crash, hang or stack overflow.
 * (How fast is measured in bench/plan-validate.ts, not asserted here.)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePlanBytes, parsePlanFile, parsePlanText } from '../../lib/plan/parse.ts';
import { validatePlan } from '../../lib/plan/validate.ts';
import { chainPlanJson as chain } from './chain-plan.ts';
import { runCli } from './cli-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'plangate-hostile-'));

describe('hostile and malformed plans', () => {
  it('refuses a 10 MB file before parsing it', async () => {
    const path = join(dir, 'huge.yaml');
    writeFileSync(path, `id: huge\nobjective: ${'x'.repeat(10 * 1024 * 1024)}\n`);
    const result = await parsePlanFile(path);
    expect(result.problems).toEqual([
      expect.objectContaining({
        code: 'file-too-large',
        message: expect.stringMatching(/10\.0 MiB; plans are limited to 8\.0 MiB/),
      }),
    ]);
  });

  it.each([
    ['json', '['.repeat(100_000)],
    ['json', `{"id":"x","context":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`],
    ['yaml', '['.repeat(100_000)],
    ['yaml', `${'- '.repeat(100_000)}x`],
    ['yaml', `a:\n${Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i + 1)}k${i}:`).join('\n')} 1`],
    ['markdown', `# T\n\n### 1. A\n**tool:** echo\n**args:**\n\`\`\`yaml\n${'['.repeat(100_000)}\n\`\`\`\n`],
  ] as const)('reports %s nested 100,000 deep as too deep', (format, text) => {
    const result = parsePlanText(text, { filename: `deep.${format}`, format });
    expect(result.plan).toBeUndefined();
    expect(result.problems[0]).toMatchObject({ code: 'too-deep', location: { line: expect.any(Number) } });
  });

  it('reports __proto__ keys and leaves prototypes alone; "constructor" is ordinary data', () => {
    for (const [format, text] of [
      ['json', '{"id":"p","objective":"o","context":{"__proto__":{"polluted":1}},"steps":[]}'],
      ['yaml', 'id: p\nobjective: o\ncontext:\n  __proto__: {polluted: 1}\nsteps: []\n'],
    ] as const) {
      const result = parsePlanText(text, { format });
      expect(result.problems.map((p) => p.code)).toEqual(['forbidden-key']);
      expect(result.problems[0]!.location.line).toBeGreaterThan(0);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
    const ok = parsePlanText(
      '{"id":"p","objective":"o","context":{"constructor":{"prototype":1}},"steps":[{"id":"constructor","description":"d","tool":"echo"}]}',
      { format: 'json' },
    );
    expect(ok.plan?.context).toEqual({ constructor: { prototype: 1 } });
    expect(ok.plan?.steps[0]?.id).toBe('constructor');
  });

  it('reports a NUL written as an escape, in a value or a key, where it stands', () => {
    for (const [format, text, pointer] of [
      [
        'json',
        '{"id":"p","objective":"o","steps":[{"id":"a","description":"d","tool":"shell","args":{"command":"echo \\u0000"}}]}',
        '/steps/0/args/command',
      ],
      ['yaml', 'id: p\nobjective: "o\\0k"\nsteps: []\n', '/objective'],
      ['json', '{"id":"p","objective":"o","context":{"a\\u0000b":1},"steps":[]}', '/context/a\u0000b'],
    ] as const) {
      const result = parsePlanText(text, { format });
      expect(result.plan).toBeUndefined();
      expect(result.problems[0]).toMatchObject({ code: 'nul-character', location: { pointer } });
      expect(result.problems[0]!.location.line).toBeGreaterThan(0);
    }
  });

  it('reports NUL bytes and invalid UTF-8 with their position', () => {
    expect(parsePlanText('id: p\nobjective: "a\0b"\n', { filename: 'n.yaml' }).problems[0]).toMatchObject({
      code: 'nul-byte',
      location: { line: 2, column: 14 },
    });
    const bytes = new Uint8Array([...new TextEncoder().encode('id: p\nobjective: caf'), 0xc3, 0x28, 0x0a]);
    expect(parsePlanBytes(bytes, { filename: 'u.yaml' }).problems[0]).toMatchObject({
      code: 'invalid-utf8',
      location: { line: 2, column: 15 },
    });
    expect(parsePlanBytes(new Uint8Array([0xf0, 0x9f, 0x98]), { filename: 'u.md' }).problems[0]?.code).toBe(
      'invalid-utf8',
    );
  });

  it('reports truncated JSON, YAML and Markdown as located syntax errors', () => {
    expect(parsePlanText('{"id": "p", "steps": [{"id": "a"', { format: 'json' }).problems[0]).toMatchObject({
      code: 'json-syntax',
      message: 'unexpected end of JSON (is the file truncated?)',
      location: { line: 1, column: 33 },
    });
    expect(parsePlanText('id: p\nsteps:\n  - {id: a, tool: "ec', { format: 'yaml' }).problems[0]?.code).toBe(
      'yaml-syntax',
    );
    expect(
      parsePlanText('# T\n\n### 1. A\n**contract:**\n```shell\ntrue', { format: 'markdown' }).problems,
    ).toContainEqual(
      expect.objectContaining({ code: 'markdown-syntax', location: expect.objectContaining({ line: 5 }) }),
    );
  });

  it('handles a 100,000-step chain: parses, validates and reports the size policy', async () => {
    const parsed = parsePlanText(chain(100_000, false), { filename: 'chain.json' });
    expect(parsed.problems).toEqual([]);
    const result = await validatePlan(parsed.plan!, { sourceMap: parsed.sourceMap, missingContract: 'off' });
    expect(result.problems.map((p) => p.code)).toEqual(['plan-size']);
  });

  it('names a cycle through 10,000 steps without listing all of them', async () => {
    const parsed = parsePlanText(chain(10_000, true), { filename: 'cycle.json' });
    const result = await validatePlan(parsed.plan!, {
      sourceMap: parsed.sourceMap,
      missingContract: 'off',
      maxSteps: 10_000,
    });
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatchObject({ code: 'dependency-cycle', location: { line: 1 } });
    expect(result.problems[0]!.message).toMatch(
      /^circular dependency: s0 → s9999 → s9998 → .* → … 9989 more … → s2 → s1 → s0$/,
    );
  });

  it('exits 2 on usage errors and a missing file, 1 on an invalid plan', async () => {
    expect((await runCli(['validate'])).code).toBe(2);
    expect((await runCli(['validate', 'examples/local-demo.yaml', '--max-steps', 'many'])).code).toBe(2);
    expect((await runCli(['validate', 'examples/local-demo.yaml', '--frobnicate'])).code).toBe(2);
    const missing = await runCli(['validate', join(dir, 'nope.md')]);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining('ENOENT') });
    expect((await runCli(['render', 'examples/local-demo.yaml', '--format', 'svg'])).code).toBe(2);
    const path = join(dir, 'garbage.json');
    writeFileSync(path, '{"id": ');
    expect((await runCli(['validate', path])).code).toBe(1);
    expect((await runCli(['validate', '--help'])).stdout).toContain('--allow-missing-contracts');
    expect((await runCli(['render', '--help'])).stdout).toContain('--format text|mermaid|json|yaml');
  });
});
