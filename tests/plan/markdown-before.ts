// TEMPORARY (issue 24): the Markdown parser as it was before the restructuring, to compare against.
/**
 * The Markdown plan file of seed 004: frontmatter, `# title`, plan-level `**Key:**`
 * fields, `### N.` steps with `**field:**` lines and fenced blocks, and an optional
 * `## Postconditions` section. Produces a plan document (before defaults) plus a
 * source map; the mapping is documented in docs/plan-formats.md.
 */

import { slug, suggest } from '../../lib/plan/names.ts';
import type { Problem } from '../../lib/plan/problems.ts';
import { type Position, type SourceMap, TableSourceMap } from '../../lib/plan/source-map.ts';
import { parseYaml } from '../../lib/plan/yaml-source.ts';

export interface MarkdownParseResult {
  /** The plan document, or undefined when the file has no usable structure. */
  readonly value: Record<string, unknown> | undefined;
  readonly sourceMap: SourceMap;
  readonly problems: Problem[];
}

interface Mount {
  readonly prefix: string;
  readonly inner: SourceMap;
  readonly lineOffset: number;
}

/** Pointer positions from the Markdown structure, plus fenced yaml/json blocks' own maps. */
class MarkdownSourceMap implements SourceMap {
  private readonly outer: TableSourceMap;

  constructor(
    readonly file: string,
    table: ReadonlyMap<string, Position>,
    private readonly mounts: readonly Mount[],
  ) {
    this.outer = new TableSourceMap(file, table);
  }

  locate(pointers: readonly string[]): Array<Position | undefined> {
    const outer = this.outer.locate(pointers);
    return pointers.map((pointer, i) => {
      const mount = this.mounts.find((m) => pointer === m.prefix || pointer.startsWith(`${m.prefix}/`));
      const inner = mount?.inner.locate([pointer.slice(mount.prefix.length)])[0];
      return mount && inner ? { line: inner.line + mount.lineOffset, column: inner.column } : outer[i];
    });
  }
}

interface Line {
  readonly text: string;
  /** 1-based. */
  readonly number: number;
}

interface Fence {
  readonly lang: string;
  readonly body: string;
  /** Line of the opening fence. */
  readonly line: number;
}

interface Field {
  readonly key: string;
  readonly inline: string;
  readonly line: number;
  /** Column where the inline value starts. */
  readonly column: number;
  readonly text: Line[];
  readonly items: Line[];
  readonly fences: Fence[];
}

interface Section {
  readonly heading: string;
  readonly line: number;
  readonly fields: Field[];
  /** Text before the first field. */
  readonly prose: Line[];
}

const STEP_FIELDS = [
  'id',
  'target',
  'tool',
  'args',
  'task',
  'subscriptions',
  'depends_on',
  'contract',
  'on_fail',
  'requires_approval',
  'requires_human',
  'critical',
  'outputs',
  'timeout_seconds',
  'rollback',
  'status',
] as const;
const POSTCONDITION_FIELDS = ['id', 'contract', 'status'] as const;
const FRONTMATTER_FIELDS = ['type', 'status', 'owner', 'id', 'version', 'min_steps', 'max_steps'] as const;
const SHELL_LANGS = new Set(['', 'shell', 'sh', 'bash', 'zsh', 'console']);

const FIELD_LINE = /^\*\*([A-Za-z][A-Za-z _-]*):\*\*[ \t]*(.*)$/;
const FENCE_OPEN = /^(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]*)/;

/** Parses Markdown plan text. `filename` gives the default plan id. */
export function parseMarkdownPlan(text: string, file: string): MarkdownParseResult {
  const table = new Map<string, Position>();
  const problems: Problem[] = [];
  const problem = (code: string, message: string, line: number, column = 1, pointer?: string) =>
    problems.push({
      severity: 'error',
      code,
      message,
      location: pointer === undefined ? { file, line, column } : { file, line, column, pointer },
    });
  const mounts: Mount[] = [];
  const record = (pointer: string, line: number, column = 1) => {
    if (!table.has(pointer)) table.set(pointer, { line, column });
  };

  const lines = text.split('\n').map((t, i) => ({ text: t.replace(/\r$/, ''), number: i + 1 }));
  const plan: Record<string, unknown> = {};
  record('', 1);

  let index = 0;
  if (lines[0]?.text === '---') {
    const end = lines.findIndex((l, i) => i > 0 && (l.text === '---' || l.text === '...'));
    if (end === -1) {
      problem('markdown-syntax', 'frontmatter starts with "---" but never ends', 1);
      return { value: undefined, sourceMap: new MarkdownSourceMap(file, table, mounts), problems };
    }
    readFrontmatter(lines.slice(1, end));
    index = end + 1;
  }

  // Split the body into the title, plan-level fields, steps and postconditions.
  let title: Line | undefined;
  const planFields: Field[] = [];
  const steps: Section[] = [];
  const postconditions: Section[] = [];
  let region: 'plan' | 'steps' | 'postconditions' | 'other' = 'plan';
  let section: Section | undefined;
  let field: Field | undefined;
  let fence: { marker: string; lang: string; line: number; body: string[] } | undefined;
  for (; index < lines.length; index++) {
    const line = lines[index]!;
    if (fence) {
      const close = line.text.trim();
      if (
        close.startsWith(fence.marker[0]!) &&
        /^(`+|~+)$/.test(close) &&
        close.length >= fence.marker.length
      ) {
        const block: Fence = { lang: fence.lang, body: fence.body.join('\n'), line: fence.line };
        if (field) field.fences.push(block);
        fence = undefined;
      } else fence.body.push(line.text);
      continue;
    }
    const open = FENCE_OPEN.exec(line.text);
    if (open) {
      fence = { marker: open[1]!, lang: (open[2] ?? '').toLowerCase(), line: line.number, body: [] };
      continue;
    }
    const heading = /^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$/.exec(line.text);
    if (heading) {
      const level = heading[1]!.length;
      const content = heading[2] ?? '';
      field = undefined;
      section = undefined;
      if (level === 1 && !title) title = { text: content, number: line.number };
      else if (level <= 2) {
        const name = content.toLowerCase().replace(/[^a-z]/g, '');
        region = name === 'steps' ? 'steps' : name === 'postconditions' ? 'postconditions' : 'other';
      } else if (level === 3 && region !== 'other') {
        if (region === 'plan') region = 'steps';
        section = { heading: content, line: line.number, fields: [], prose: [] };
        (region === 'steps' ? steps : postconditions).push(section);
      }
      continue;
    }
    const fieldMatch = FIELD_LINE.exec(line.text);
    if (fieldMatch && (section || region === 'plan')) {
      const key = fieldMatch[1]!.trim().toLowerCase().replace(/[ -]+/g, '_');
      const inline = (fieldMatch[2] ?? '').trim();
      field = {
        key,
        inline,
        line: line.number,
        column: line.text.length - (fieldMatch[2] ?? '').length + 1,
        text: [],
        items: [],
        fences: [],
      };
      (section ? section.fields : planFields).push(field);
      continue;
    }
    if (line.text.trim() === '') {
      // A blank line ends a one-line field (`**Budget:** …`); a field written below its label runs on.
      if (field && field.inline !== '') field = undefined;
      continue;
    }
    const item = /^[ \t]*[-*+][ \t]+(.*)$/.exec(line.text);
    if (field && item) field.items.push({ text: item[1]!.trim(), number: line.number });
    else if (field) field.text.push({ text: line.text.trim(), number: line.number });
    else if (section) section.prose.push({ text: line.text.trim(), number: line.number });
  }
  if (fence) problem('markdown-syntax', `code block opened here is never closed`, fence.line);

  if (title) {
    plan.objective = title.text;
    record('/objective', title.number, 3);
  } else problem('markdown-syntax', 'plan has no "# title" (the title is the objective)', 1);
  if (plan.id === undefined) {
    const base =
      file
        .split(/[\\/]/)
        .pop()
        ?.replace(/\.(md|markdown)$/i, '') ?? '';
    plan.id = slug(base) || slug(title?.text ?? '') || 'plan';
  }
  readPlanFields();
  readSteps();
  readPostconditions();
  return { value: plan, sourceMap: new MarkdownSourceMap(file, table, mounts), problems };

  function readFrontmatter(body: Line[]) {
    const parsed = parseYaml(body.map((l) => l.text).join('\n'), file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        problem(p.code, `frontmatter: ${p.message}`, p.position.line + 1, p.position.column);
      return;
    }
    const front = parsed.value;
    if (front === null || front === undefined) return;
    if (typeof front !== 'object' || Array.isArray(front)) {
      problem('markdown-syntax', 'frontmatter must be "key: value" lines', 2);
      return;
    }
    const at = (key: string) => {
      const position = parsed.sourceMap.locate([`/${key}`])[0];
      return { line: (position?.line ?? 1) + 1, column: position?.column ?? 1 };
    };
    for (const [key, value] of Object.entries(front)) {
      const { line, column } = at(key);
      if (!(FRONTMATTER_FIELDS as readonly string[]).includes(key)) {
        problem(
          'unknown-field',
          `unknown frontmatter field "${key}"${suggest(key, FRONTMATTER_FIELDS)}`,
          line,
          column,
        );
        continue;
      }
      if (key === 'type') {
        if (value !== 'plan')
          problem('markdown-syntax', `frontmatter type must be "plan", not "${String(value)}"`, line, column);
        continue;
      }
      if (key === 'min_steps' || key === 'max_steps') {
        if (plan.sizePolicy === undefined) plan.sizePolicy = {};
        const policy = plan.sizePolicy as Record<string, unknown>;
        policy[key === 'min_steps' ? 'minSteps' : 'maxSteps'] = value;
        record(`/sizePolicy/${key === 'min_steps' ? 'minSteps' : 'maxSteps'}`, line, column);
        continue;
      }
      plan[key] = value;
      record(`/${key}`, line, column);
    }
  }

  function readPlanFields() {
    const context: Record<string, unknown> = {};
    for (const f of planFields) {
      const value = joined(f);
      if (f.key === 'context') {
        if (value !== '') context.summary = value;
        for (const block of f.fences) {
          const parsed = structured(block, '/context');
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(context, parsed);
          else if (parsed !== undefined)
            problem('markdown-syntax', 'the context block must be a mapping', block.line);
        }
        record('/context', f.line, f.column);
      } else if (f.key === 'budget') {
        plan.budget = parseBudget(f);
        record('/budget', f.line, f.column);
      } else if (f.key === 'secrets') {
        plan.secrets = f.items.map((item, i) => {
          record(`/secrets/${i}`, item.number, 3);
          const m = /^`?([^:`\s]+)`?\s*:\s*`?(env|secretsmanager):([^`\s]+)`?$/.exec(item.text);
          if (!m) {
            problem(
              'markdown-syntax',
              'a secret is "- <name>: env:<VARIABLE>" or "- <name>: secretsmanager:<id>"',
              item.number,
              3,
            );
            return {};
          }
          return { name: m[1], source: m[2], ref: m[3] };
        });
        record('/secrets', f.line, f.column);
      } else if (f.key === 'approvers') {
        plan.approval = { ...(plan.approval as object), approvers: list(f) };
        record('/approval/approvers', f.line, f.column);
      } else if (f.key === 'quorum') {
        plan.approval = { ...(plan.approval as object), quorum: scalar(f.inline) };
        record('/approval/quorum', f.line, f.column);
      } else {
        context[f.key] = value;
        record(`/context/${f.key}`, f.line, f.column);
      }
    }
    if (Object.keys(context).length > 0) plan.context = context;
  }

  function readSteps() {
    const ids: string[] = [];
    const numbers = new Map<string, string>();
    const pendingDeps: Array<{ step: Record<string, unknown>; field: Field | undefined; index: number }> = [];
    plan.steps = steps.map((s, i) => {
      const pointer = `/steps/${i}`;
      const heading = /^(?:(\d+)[.)][ \t]*)?(?:✅[ \t]*)?(.*)$/.exec(s.heading)!;
      const number = heading[1] ?? String(i + 1);
      const description = (heading[2] ?? '').trim();
      const step: Record<string, unknown> = { description };
      record(pointer, s.line, 1);
      record(`${pointer}/description`, s.line, 5);
      const idField = s.fields.find((f) => f.key === 'id');
      step.id = idField
        ? unquote(idField.inline)
        : `s${number}-${slug(description)}`.slice(0, 64).replace(/-+$/, '') || `s${number}`;
      record(`${pointer}/id`, idField?.line ?? s.line, idField?.column ?? 5);
      numbers.set(number, String(step.id));
      ids.push(String(step.id));
      for (const f of s.fields) {
        const at = `${pointer}/${camel(f.key)}`;
        record(at, f.line, f.column);
        switch (f.key) {
          case 'id':
          case 'status':
          case 'depends_on':
            break;
          case 'target':
          case 'tool':
            step[f.key] = unquote(f.inline);
            break;
          case 'task':
            step.task = [f.inline, ...f.text.map((l) => l.text), ...f.items.map((l) => `- ${l.text}`)]
              .filter((t) => t !== '')
              .join('\n');
            break;
          case 'args': {
            const block = f.fences[0];
            const parsed = block ? structured(block, at) : f.inline ? inlineStructured(f, at) : undefined;
            if (parsed !== undefined) step.args = parsed;
            break;
          }
          case 'subscriptions':
          case 'outputs':
            step[f.key] = list(f);
            break;
          case 'contract':
            step.contract = contractOf(f, at);
            break;
          case 'on_fail':
            step.onFail = onFailOf(f);
            break;
          case 'requires_approval':
          case 'requires_human':
          case 'critical':
            step[camel(f.key)] = booleanOf(f);
            break;
          case 'timeout_seconds':
            step.timeoutSeconds = durationOf(f.inline) ?? scalar(f.inline);
            break;
          case 'rollback':
            step.rollback = rollbackOf(f, at);
            break;
          default:
            problem(
              'unknown-field',
              `unknown step field "${f.key}"${suggest(f.key, STEP_FIELDS)}`,
              f.line,
              1,
              at,
            );
        }
      }
      pendingDeps.push({ step, field: s.fields.find((f) => f.key === 'depends_on'), index: i });
      return step;
    });
    // Dependencies may name later steps by number, so they resolve once every step is known.
    for (const { step, field: f, index: i } of pendingDeps) {
      if (!f) {
        step.dependsOn = i === 0 ? [] : [ids[i - 1]];
        continue;
      }
      step.dependsOn = list(f)
        .filter((d) => !/^(none|-|\[\])$/i.test(d))
        .map((d) => {
          const n = /^(?:step[ \t]*)?#?(\d+)$/i.exec(d);
          if (!n) return d;
          const id = numbers.get(n[1]!);
          if (id === undefined)
            problem('unknown-dependency', `depends on step ${n[1]}, which does not exist`, f.line, f.column);
          return id ?? d;
        });
    }
  }

  function readPostconditions() {
    if (postconditions.length === 0) return;
    plan.postconditions = postconditions.map((s, i) => {
      const pointer = `/postconditions/${i}`;
      const heading = /^(?:(\d+)[.)][ \t]*)?(.*)$/.exec(s.heading)!;
      const description = (heading[2] ?? '').trim();
      const idField = s.fields.find((f) => f.key === 'id');
      const pc: Record<string, unknown> = {
        id: idField
          ? unquote(idField.inline)
          : `p${heading[1] ?? i + 1}-${slug(description)}`.slice(0, 64).replace(/-+$/, ''),
        description,
      };
      record(pointer, s.line, 1);
      record(`${pointer}/description`, s.line, 5);
      for (const f of s.fields) {
        const at = `${pointer}/${camel(f.key)}`;
        record(at, f.line, f.column);
        if (f.key === 'contract') pc.contract = contractOf(f, at);
        else if (!(POSTCONDITION_FIELDS as readonly string[]).includes(f.key))
          problem(
            'unknown-field',
            `unknown postcondition field "${f.key}"${suggest(f.key, POSTCONDITION_FIELDS)}`,
            f.line,
            1,
            at,
          );
      }
      return pc;
    });
  }

  /** `**contract:**` + a fenced block (shell → command, jsonata → assert, yaml/json → any kind) + `exit_code == N`. */
  function contractOf(f: Field, at: string): unknown {
    const block = f.fences[0];
    const extra = [...f.text, ...f.items];
    let contract: Record<string, unknown>;
    if (block && !SHELL_LANGS.has(block.lang) && block.lang !== 'jsonata') {
      const parsed = structured(block, at);
      return parsed;
    }
    if (block?.lang === 'jsonata') {
      record(`${at}/expression`, block.line + 1);
      contract = { kind: 'assert', expression: block.body.trim() };
    } else if (block) {
      record(`${at}/command`, block.line + 1);
      contract = { kind: 'command', command: block.body.trim() };
    } else {
      const inline = /^`(.+)`$/.exec(f.inline);
      if (!inline) {
        problem(
          'markdown-syntax',
          'a contract is a fenced ```shell block (or `inline command`) after **contract:**',
          f.line,
          f.column,
          at,
        );
        return undefined;
      }
      record(`${at}/command`, f.line, f.column + 1);
      contract = { kind: 'command', command: inline[1] };
    }
    for (const l of extra) {
      const exit = /^exit_code[ \t]*==[ \t]*(\d+)$/.exec(l.text);
      const stdout = /^stdout_matches:[ \t]*`?(.*?)`?$/.exec(l.text);
      if (exit && contract.kind === 'command') {
        contract.expectExitCode = Number(exit[1]);
        record(`${at}/expectExitCode`, l.number);
      } else if (stdout && contract.kind === 'command') {
        contract.stdoutMatches = stdout[1];
        record(`${at}/stdoutMatches`, l.number, 17);
      } else
        problem(
          'markdown-syntax',
          `unexpected line in contract: "${l.text}" (expected "exit_code == N")`,
          l.number,
          1,
          at,
        );
    }
    return contract;
  }

  function onFailOf(f: Field): unknown {
    const text = f.inline.toLowerCase().replace(/`/g, '').trim();
    const m = /^(?:retry\((\d+)\))?(?:[ \t]*,?[ \t]*(?:then[ \t]+)?(escalate|abort|skip))?$/.exec(text);
    if (!m || text === '') {
      problem(
        'markdown-syntax',
        'on_fail is "retry(N)", "escalate", "abort", "skip" or "retry(N), then escalate|abort|skip"',
        f.line,
        f.column,
        undefined,
      );
      return undefined;
    }
    const escalation = m[2] === 'abort' ? 'abort' : m[2] === 'skip' ? 'skip' : 'ask';
    return { retries: m[1] === undefined ? 0 : Number(m[1]), escalation };
  }

  function rollbackOf(f: Field, at: string): unknown {
    const block = f.fences[0];
    if (block && SHELL_LANGS.has(block.lang)) return { tool: 'shell', args: { command: block.body.trim() } };
    if (block) return structured(block, at);
    const inline = /^`(.+)`$/.exec(f.inline);
    if (inline) return { tool: 'shell', args: { command: inline[1] } };
    problem(
      'markdown-syntax',
      'a rollback is a fenced ```shell block, or a ```yaml block with tool and args',
      f.line,
      f.column,
    );
    return undefined;
  }

  function booleanOf(f: Field): unknown {
    const v = f.inline.toLowerCase();
    if (['true', 'yes', 'y'].includes(v)) return true;
    if (['false', 'no', 'n'].includes(v)) return false;
    return f.inline;
  }

  function parseBudget(f: Field): Record<string, number> {
    const budget: Record<string, number> = {};
    for (const raw of joined(f).split(/[,;]/)) {
      const part = raw.trim().replace(/^max(imum)?\s+/i, '');
      if (part === '') continue;
      const tokens = /^(\d+(?:\.\d+)?)\s*([kKmM])?\s*tokens?$/.exec(part);
      const cost = /^\$\s*(\d+(?:\.\d+)?)$/.exec(part);
      const seconds = durationOf(part.replace(/\s*wall[ -]?clock$/i, ''));
      if (tokens) {
        const unit = tokens[2]?.toLowerCase();
        budget.tokens = Math.round(Number(tokens[1]) * (unit === 'k' ? 1e3 : unit === 'm' ? 1e6 : 1));
      } else if (cost) budget.costUsd = Number(cost[1]);
      else if (seconds !== undefined) budget.wallClockSeconds = seconds;
      else
        problem(
          'markdown-syntax',
          `budget part "${part}" is not "<N>k tokens", "$<amount>" or "<N> minutes"`,
          f.line,
          f.column,
          '/budget',
        );
    }
    return budget;
  }

  /** Parses a fenced yaml/json block; its problems are located inside the fence. */
  function structured(block: Fence, at: string): unknown {
    if (!['yaml', 'yml', 'json', ''].includes(block.lang)) {
      problem('markdown-syntax', `expected a yaml or json block, not "${block.lang}"`, block.line, 1, at);
      return undefined;
    }
    const parsed = parseYaml(block.body, file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        problem(p.code, p.message, block.line + p.position.line, p.position.column, at);
      return undefined;
    }
    mount(parsed.sourceMap, at, block.line);
    return parsed.value;
  }

  function inlineStructured(f: Field, at: string): unknown {
    const parsed = parseYaml(f.inline, file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        problem(p.code, p.message, f.line, f.column + p.position.column - 1, at);
      return undefined;
    }
    return parsed.value;
  }

  /** Later lookups under `at` are answered by the block's own source map, shifted to the fence. */
  function mount(inner: SourceMap, at: string, fenceLine: number) {
    mounts.push({ prefix: at, inner, lineOffset: fenceLine });
  }
}

function joined(f: Field): string {
  return [f.inline, ...f.text.map((l) => l.text)].filter((t) => t !== '').join(' ');
}

function list(f: Field): string[] {
  const inline = f.inline.replace(/^\[|\]$/g, '');
  const parts = inline === '' ? [] : inline.split(',');
  return [...parts, ...f.items.map((l) => l.text)].map((p) => unquote(p.trim())).filter((p) => p !== '');
}

function unquote(text: string): string {
  return text
    .replace(/^`(.*)`$/, '$1')
    .replace(/^"(.*)"$/, '$1')
    .trim();
}

function scalar(text: string): unknown {
  const t = unquote(text);
  return /^-?\d+(\.\d+)?$/.test(t) ? Number(t) : t;
}

/** "90", "90s", "20 minutes", "2 h" → seconds. */
function durationOf(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)?$/i.exec(text.trim());
  if (!m) return undefined;
  const unit = (m[2] ?? 's').toLowerCase();
  const factor = unit.startsWith('h') ? 3600 : unit.startsWith('m') ? 60 : 1;
  return Math.round(Number(m[1]) * factor);
}

function camel(key: string): string {
  return key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}
