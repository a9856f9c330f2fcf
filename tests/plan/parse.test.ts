// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { detectFormat, parsePlanFile, parsePlanText } from '../../lib/plan/parse.ts';
import { renderJson, renderYaml } from '../../lib/plan/render.ts';
import { validPlan } from './arbitraries.ts';

describe('the three formats parse into the same Plan', () => {
  it.each([
    'fix-auth-timeout.md',
    'extract-config-module.md',
    'migrate-requests-to-httpx.md',
    'local-demo.yaml',
    'release-api.json',
  ])('%s survives a trip through JSON and YAML unchanged', async (example) => {
    const { plan, problems } = await parsePlanFile(`examples/${example}`);
    expect(problems).toEqual([]);
    const fromJson = parsePlanText(renderJson(plan!), { filename: 'x.json' });
    const fromYaml = parsePlanText(renderYaml(plan!), { filename: 'x.yaml' });
    expect(fromJson.plan).toEqual(plan);
    expect(fromYaml.plan).toEqual(plan);
  });

  it('maps seed 004 Markdown fields onto the documented plan fields', () => {
    const markdown = `---
type: plan
status: approved
owner: orchestrator
version: 2
---

# Ship the thing

**Context:** Something is broken.
**Budget:** max 200k tokens, $1.50, 20 minutes wall clock
**Priority:** high
**Secrets:**
- token: env:SHIP_TOKEN

## Steps

### 1. Analyze the bug

**target:** coder
**subscriptions:**
- file:src/a.py
- topic:ship

**task:**
Read the code.
Write docs/analysis.md.

**contract:**
\`\`\`shell
test -f docs/analysis.md
\`\`\`
exit_code == 0
**on_fail:** retry(2), then escalate

### 2. Publish

**tool:** http
**args:**
\`\`\`yaml
method: POST
url: https://example.com/publish
headers: { authorization: "Bearer \${secrets.token}" }
\`\`\`
**requires_approval:** yes
**outputs:** url, revision
**timeout_seconds:** 5 minutes
**contract:**
\`\`\`jsonata
output.status = 201
\`\`\`
**on_fail:** abort

### 3. ✅ Tell people

**depends_on:** 1, 2
**tool:** echo
**args:** {message: "\${steps.s2-publish.url}"}
**critical:** false
**contract:** \`true\`
exit_code == 0

## Postconditions

### Analysis exists
**contract:**
\`\`\`sh
test -s docs/analysis.md
\`\`\`
`;
    const { plan, problems } = parsePlanText(markdown, { filename: 'plans/ship-it.md' });
    expect(problems).toEqual([]);
    expect(plan).toMatchObject({
      id: 'ship-it',
      version: 2,
      status: 'approved',
      owner: 'orchestrator',
      objective: 'Ship the thing',
      context: { summary: 'Something is broken.', priority: 'high' },
      budget: { tokens: 200_000, costUsd: 1.5, wallClockSeconds: 1200 },
      secrets: [{ name: 'token', source: 'env', ref: 'SHIP_TOKEN' }],
      postconditions: [
        {
          id: 'p1-analysis-exists',
          description: 'Analysis exists',
          contract: { kind: 'command', command: 'test -s docs/analysis.md', expectExitCode: 0 },
        },
      ],
    });
    const [s1, s2, s3] = plan!.steps;
    expect(s1).toMatchObject({
      id: 's1-analyze-the-bug',
      description: 'Analyze the bug',
      target: 'coder',
      task: 'Read the code.\nWrite docs/analysis.md.',
      subscriptions: ['file:src/a.py', 'topic:ship'],
      dependsOn: [],
      contract: { kind: 'command', command: 'test -f docs/analysis.md', expectExitCode: 0 },
      onFail: { retries: 2, escalation: 'ask' },
    });
    expect(s2).toMatchObject({
      id: 's2-publish',
      tool: 'http',
      args: {
        method: 'POST',
        url: 'https://example.com/publish',
        headers: { authorization: 'Bearer ${secrets.token}' },
      },
      dependsOn: ['s1-analyze-the-bug'],
      requiresApproval: true,
      outputs: ['url', 'revision'],
      timeoutSeconds: 300,
      contract: { kind: 'assert', expression: 'output.status = 201' },
      onFail: { retries: 0, escalation: 'abort' },
    });
    expect(s3).toMatchObject({
      id: 's3-tell-people',
      description: 'Tell people',
      dependsOn: ['s1-analyze-the-bug', 's2-publish'],
      critical: false,
      contract: { kind: 'command', command: 'true' },
    });
  });

  it('locates Markdown problems inside fenced blocks at their own line', () => {
    const text = '# T\n\n### 1. A\n**tool:** shell\n**args:**\n```yaml\ncommand: ls\ncwd: [unclosed\n```\n';
    const { problems } = parsePlanText(text, { filename: 'p.md' });
    expect(problems[0]).toMatchObject({ code: 'yaml-syntax', location: { file: 'p.md', line: 8 } });
  });

  it('detects the format from the extension, else from the text', () => {
    expect(detectFormat('a.JSON', '')).toBe('json');
    expect(detectFormat('a.yml', '')).toBe('yaml');
    expect(detectFormat('a.markdown', '')).toBe('markdown');
    expect(detectFormat('-', ' {"id": 1}')).toBe('json');
    expect(detectFormat('-', '---\ntype: plan\n---\n\n# Title\n')).toBe('markdown');
    expect(detectFormat('-', 'id: x\nsteps: []\n')).toBe('yaml');
  });
});

describe('JSON ↔ YAML round trip (property)', () => {
  it('any valid plan written as JSON or YAML parses to the same Plan', () => {
    fc.assert(
      fc.property(validPlan, (document) => {
        const json = parsePlanText(JSON.stringify(document), { format: 'json' });
        const yaml = parsePlanText(stringify(document), { format: 'yaml' });
        expect(json.problems).toEqual([]);
        expect(yaml.plan).toEqual(json.plan);
        const again = parsePlanText(renderYaml(json.plan!), { format: 'yaml' });
        expect(again.plan).toEqual(json.plan);
      }),
      { numRuns: 150 },
    );
  });
});

describe('parsers never throw (property)', () => {
  const samples = ['fix-auth-timeout.md', 'local-demo.yaml', 'release-api.json'].map((f) => ({
    file: f,
    text: readFileSync(`examples/${f}`, 'utf8'),
  }));

  it('arbitrary text in any format yields a plan or located problems', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.constantFrom('json', 'yaml', 'markdown'),
        (text, format) => {
          const result = parsePlanText(text, { filename: 'fuzz', format: format as 'json' });
          expect(result.plan !== undefined || result.problems.some((p) => p.severity === 'error')).toBe(true);
          for (const p of result.problems) expect(p.location.file).toBe('fuzz');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('examples cut, spliced or corrupted at random points yield a plan or located problems', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...samples),
        fc.nat(),
        fc.nat(),
        fc.string({ maxLength: 8 }),
        (sample, a, b, insert) => {
          const i = a % sample.text.length;
          const j = Math.min(sample.text.length, i + (b % 40));
          const text = sample.text.slice(0, i) + insert + sample.text.slice(j);
          const result = parsePlanText(text, { filename: sample.file });
          if (!result.plan) {
            expect(result.problems.length).toBeGreaterThan(0);
            for (const p of result.problems) expect(p.location.line ?? p.location.pointer).toBeDefined();
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
