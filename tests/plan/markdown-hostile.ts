/**
 * Hostile Markdown plans for the Markdown parser's property tests, and a faithful, order-keeping
 * description of what the parser returned (value, sorted problems, and where every pointer is).
 */
import fc from 'fast-check';
import type { MarkdownParseResult } from '../../lib/plan/markdown.ts';
import { sortProblems } from '../../lib/plan/problems.ts';

/** Lines a plan file is made of, plus the ones that break its structure. */
const LINES = [
  '---',
  '...',
  'type: plan',
  'type: checklist',
  'status: approved',
  'owner: me',
  'id: custom-plan',
  'id:',
  'version: 3',
  'min_steps: 1',
  'max_steps: 2',
  'colour: blue',
  '__proto__: {polluted: 1}',
  '# Fix the thing',
  '# ',
  '#',
  '# Title with closing hashes ##',
  '## Steps',
  '## Postconditions',
  '## Post-conditions',
  '## Notes',
  '### 1. Analyze the bug',
  '### 2) ✅ Build it',
  '### 10. Far away',
  '### Unnumbered step',
  '###',
  '#### Deep heading',
  '**Context:** Something broke.',
  '**Context:**',
  '**Budget:** max 200k tokens, $1.50, 20 minutes wall clock',
  '**Budget:** 3 M tokens; $0; 2 h',
  '**Budget:** lots',
  '**Priority:** high',
  '**Secrets:**',
  '- github_token: env:GITHUB_TOKEN',
  '- `key`: `secretsmanager:prod/key`',
  '- not a secret',
  '**Approvers:** alice@example.com, bob@example.com',
  '**Quorum:** 2',
  '**Quorum:** many',
  '**id:** custom-step',
  '**id:** "quoted id"',
  '**target:** coder',
  '**tool:** shell',
  '**tool:** `echo`',
  '**args:**',
  '**args:** {command: ls}',
  '**args:** [unclosed',
  '**args:** {message: "${steps.s1-analyze-the-bug.url}"}',
  '**task:**',
  '**task:** Do it now.',
  '**subscriptions:**',
  '- file:src/a.py',
  '**depends_on:** 1, 2',
  '**depends_on:** none',
  '**depends_on:** [step 1, #9, s1-analyze-the-bug]',
  '**contract:**',
  '**contract:** `test -f x`',
  '**contract:** not inline code',
  'exit_code == 0',
  'exit_code == 300',
  'stdout_matches: `ok.*`',
  '**on_fail:** retry(2), then escalate',
  '**on_fail:** `retry(1), skip`',
  '**on_fail:** abort',
  '**on_fail:** sometimes',
  '**requires_approval:** yes',
  '**requires_human:** N',
  '**critical:** maybe',
  '**outputs:** url, revision',
  '**outputs:**',
  '**timeout_seconds:** 5 minutes',
  '**timeout_seconds:** 90',
  '**timeout_seconds:** soon',
  '**rollback:**',
  '**rollback:** `git revert HEAD`',
  '**rollback:** by hand',
  '**status:** done',
  '**status: done**',
  '**Sttaus:** done',
  '**bogus field:** x',
  '**Plan-Level Key:** value',
  '```',
  '```yaml',
  '```json',
  '```shell',
  '```sh',
  '```jsonata',
  '```python',
  '````',
  '~~~',
  '~~~yaml',
  '   ```',
  'command: echo hi > out.txt',
  'message: hello',
  'kind: http',
  'url: https://example.com',
  'method: POST',
  'tool: shell',
  'args: {command: undo}',
  'key: [unclosed',
  'a: 1',
  'a: 1',
  '[1, 2]',
  'output.status = 201',
  'test -f docs/analysis.md',
  '- item',
  '* star item',
  '  + nested item',
  '-',
  '- ',
  '* * *',
  'Plain prose line.',
  '    indented code?',
  '<!-- comment -->',
  '\t**tool:** tabbed',
  'text with ${HOME} and `code`',
  'ünïcödé 🚀 line',
  '',
  '',
  '',
  '   ',
] as const;

const FENCE_OPENS = [
  '```',
  '```yaml',
  '```json',
  '```shell',
  '```sh',
  '```jsonata',
  '```python',
  '````',
  '~~~',
  '~~~yaml',
];
const FENCE_CLOSES = ['```', '````', '~~~', '   ```', '``', ''];
const FENCE_BODIES = LINES.filter((l) => !l.startsWith('`') && !l.startsWith('~'));
const HEADINGS = LINES.filter((l) => l.startsWith('#'));

const anyLine = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...LINES) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom(...LINES).map((l) => `${l}\r`) },
);

/** A fenced block, usually closed by a matching fence, sometimes by a wrong one or none. */
const fencedBlock = fc
  .tuple(
    fc.constantFrom(...FENCE_OPENS),
    fc.array(fc.constantFrom(...FENCE_BODIES), { maxLength: 3 }),
    fc.oneof({ weight: 4, arbitrary: fc.constant('match') }, fc.constantFrom(...FENCE_CLOSES)),
  )
  .map(([open, body, close]) => [open, ...body, close === 'match' ? open.replace(/[^`~]/g, '') : close]);

/** A heading followed by lines and fenced blocks. */
const section = fc
  .tuple(
    fc.constantFrom(...HEADINGS),
    fc.array(fc.oneof({ weight: 4, arbitrary: anyLine.map((l) => [l]) }, fencedBlock), { maxLength: 10 }),
  )
  .map(([heading, chunks]) => [heading, ...chunks.flat()]);

/** File names a plan may come from: they give the default plan id. */
export const markdownFileName = fc.constantFrom(
  'plans/ship-it.md',
  'Fix Auth Timeout.markdown',
  'C:\\plans\\release.MD',
  '<plan>',
  '',
  '!!!.md',
);

/** A Markdown plan made of plan-file lines, fenced blocks and sections, sometimes behind frontmatter. */
export const hostileMarkdown: fc.Arbitrary<string> = fc
  .record({
    frontmatter: fc.option(fc.array(fc.constantFrom(...LINES.slice(0, 13)), { maxLength: 4 }), {
      nil: undefined,
    }),
    closed: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, fc.constant(false)),
    preamble: fc.array(anyLine, { maxLength: 8 }),
    sections: fc.array(section, { maxLength: 6 }),
    newline: fc.oneof({ weight: 4, arbitrary: fc.constant('\n') }, fc.constant('\r\n')),
  })
  .map(({ frontmatter, closed, preamble, sections, newline }) => {
    const head = frontmatter ? ['---', ...frontmatter, ...(closed ? ['---'] : [])] : [];
    return [...head, ...preamble, ...sections.flat()].join(newline);
  });

/**
 * What a parse returned, as plain data in which key order counts: the value, the problems in
 * the order `parsePlanText` reports them, and the position of every pointer into the value
 * (and of a child that does not exist, which falls back to its nearest ancestor).
 */
export function describeParse(result: MarkdownParseResult): unknown {
  const pointers = ['', '/nope', ...pointersOf(result.value, '')].flatMap((p) => [p, `${p}/missing`]);
  const positions = result.sourceMap.locate(pointers);
  return {
    value: encode(result.value),
    problems: sortProblems(result.problems),
    positions: pointers
      .map((pointer, i) => `${pointer} ${positions[i] ? `${positions[i].line}:${positions[i].column}` : '-'}`)
      .join('\n'),
  };
}

function pointersOf(value: unknown, at: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const pointer = `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    return [pointer, ...pointersOf(child, pointer)];
  });
}

/** JSON-able and order-keeping: objects become entry lists; undefined, -0, NaN and ±Infinity are tagged. */
function encode(value: unknown): unknown {
  if (value === undefined) return { $: 'undefined' };
  if (typeof value === 'number')
    return Number.isFinite(value) && !Object.is(value, -0) ? value : { $: 'number', text: String(value) };
  if (typeof value === 'bigint') return { $: 'bigint', text: String(value) };
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(encode);
  const prototype = Object.getPrototypeOf(value);
  return {
    $: prototype === Object.prototype || prototype === null ? 'object' : 'object with another prototype',
    entries: Object.entries(value).map(([key, child]) => [key, encode(child)]),
  };
}
