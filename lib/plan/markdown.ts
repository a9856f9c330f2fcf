/**
 * The Markdown plan file of seed 004: frontmatter, `# title`, plan-level `**Key:**`
 * fields, `### N.` steps with `**field:**` lines and fenced blocks, and an optional
 * `## Postconditions` section. Produces a plan document (before defaults) plus a
 * source map; the mapping is documented in docs/plan-formats.md.
 *
 * Two passes: markdown-outline.ts reads the Markdown into an outline of located fields;
 * this file maps the outline onto the plan's fields, recording where each came from.
 */

import {
  type FencedBlock,
  type Field,
  type MarkdownOutline,
  type OutlineResult,
  outlineMarkdownPlan,
  type Section,
  type SourceLine,
} from './markdown-outline.ts';
import { slug, suggest } from './names.ts';
import type { Problem } from './problems.ts';
import { type Position, type SourceMap, TableSourceMap } from './source-map.ts';
import { parseYaml } from './yaml-source.ts';

export interface MarkdownParseResult {
  /** The plan document, or undefined when the file has no usable structure. */
  readonly value: Record<string, unknown> | undefined;
  readonly sourceMap: SourceMap;
  readonly problems: Problem[];
}

/** Parses Markdown plan text. `file` gives the default plan id. */
export function parseMarkdownPlan(text: string, file: string): MarkdownParseResult {
  return new MarkdownPlanMapper(file).map(outlineMarkdownPlan(text));
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
  'output_shapes',
  'timeout_seconds',
  'rollback',
  'aws',
  'network',
  'status',
] as const;
const POSTCONDITION_FIELDS = ['id', 'contract', 'status'] as const;
const FRONTMATTER_FIELDS = ['type', 'status', 'owner', 'id', 'version', 'min_steps', 'max_steps'] as const;
const SHELL_LANGS = new Set(['', 'shell', 'sh', 'bash', 'zsh', 'console']);

/** A step before its dependencies are resolved (they may name later steps by number). */
interface MappedStep {
  readonly step: Record<string, unknown>;
  /** The number in `### N.`, else the step's position from 1. */
  readonly number: string;
  readonly dependsOn: Field | undefined;
}

/**
 * The second pass: outline → plan document. One instance maps one file; it collects the
 * problems, the pointer → position table and the fenced blocks' own source maps as it goes.
 */
class MarkdownPlanMapper {
  private readonly problems: Problem[] = [];
  /** First position recorded for each pointer. */
  private readonly table = new Map<string, Position>();
  private readonly mounts: Mount[] = [];

  constructor(private readonly file: string) {}

  map(outlined: OutlineResult): MarkdownParseResult {
    this.record('', 1);
    if (!outlined.ok) {
      this.problem('markdown-syntax', outlined.error.message, outlined.error.line);
      return this.result(undefined);
    }
    const { outline, errors } = outlined;
    const plan = outline.frontmatter ? this.frontmatter(outline.frontmatter) : {};
    for (const error of errors) this.problem('markdown-syntax', error.message, error.line);
    this.title(plan, outline);
    Object.assign(plan, this.planFields(outline.planFields));
    plan.steps = this.steps(outline.steps);
    if (outline.postconditions.length > 0) plan.postconditions = this.postconditions(outline.postconditions);
    return this.result(plan);
  }

  private result(value: Record<string, unknown> | undefined): MarkdownParseResult {
    return {
      value,
      sourceMap: new MarkdownSourceMap(this.file, this.table, this.mounts),
      problems: this.problems,
    };
  }

  private frontmatter(lines: readonly SourceLine[]): Record<string, unknown> {
    const plan: Record<string, unknown> = {};
    const parsed = parseYaml(lines.map((l) => l.text).join('\n'), this.file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        this.problem(p.code, `frontmatter: ${p.message}`, p.position.line + 1, p.position.column);
      return plan;
    }
    const front = parsed.value;
    if (front === null || front === undefined) return plan;
    if (typeof front !== 'object' || Array.isArray(front)) {
      this.problem('markdown-syntax', 'frontmatter must be "key: value" lines', 2);
      return plan;
    }
    for (const [key, value] of Object.entries(front)) {
      // The frontmatter starts on line 2, below the opening `---`.
      const position = parsed.sourceMap.locate([`/${key}`])[0];
      const line = (position?.line ?? 1) + 1;
      const column = position?.column ?? 1;
      if (!(FRONTMATTER_FIELDS as readonly string[]).includes(key)) {
        this.problem(
          'unknown-field',
          `unknown frontmatter field "${key}"${suggest(key, FRONTMATTER_FIELDS)}`,
          line,
          column,
        );
      } else if (key === 'type') {
        if (value !== 'plan')
          this.problem(
            'markdown-syntax',
            `frontmatter type must be "plan", not "${String(value)}"`,
            line,
            column,
          );
      } else if (key === 'min_steps' || key === 'max_steps') {
        const name = key === 'min_steps' ? 'minSteps' : 'maxSteps';
        plan.sizePolicy = { ...(plan.sizePolicy as object | undefined), [name]: value };
        this.record(`/sizePolicy/${name}`, line, column);
      } else {
        plan[key] = value;
        this.record(`/${key}`, line, column);
      }
    }
    return plan;
  }

  /** The `# title` is the objective; the file name (else the title) gives the default id. */
  private title(plan: Record<string, unknown>, { title }: MarkdownOutline): void {
    if (title) {
      plan.objective = title.text;
      this.record('/objective', title.number, 3);
    } else this.problem('markdown-syntax', 'plan has no "# title" (the title is the objective)', 1);
    if (plan.id === undefined) {
      const base =
        this.file
          .split(/[\\/]/)
          .pop()
          ?.replace(/\.(md|markdown)$/i, '') ?? '';
      plan.id = slug(base) || slug(title?.text ?? '') || 'plan';
    }
  }

  /** `**Context:**`, `**Budget:**`, `**Secrets:**`, `**Approvers:**`, `**Quorum:**`; any other key is context. */
  private planFields(fields: readonly Field[]): Record<string, unknown> {
    const plan: Record<string, unknown> = {};
    const context: Record<string, unknown> = {};
    for (const f of fields) {
      const value = joined(f);
      if (f.key === 'context') {
        if (value !== '') context.summary = value;
        for (const block of f.fences) {
          const parsed = this.structured(block, '/context');
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) Object.assign(context, parsed);
          else if (parsed !== undefined)
            this.problem('markdown-syntax', 'the context block must be a mapping', block.line);
        }
        this.record('/context', f.line, f.column);
      } else if (f.key === 'budget') {
        plan.budget = this.budget(f);
        this.record('/budget', f.line, f.column);
      } else if (f.key === 'secrets') {
        plan.secrets = f.items.map((item, i) => this.secret(item, i));
        this.record('/secrets', f.line, f.column);
      } else if (f.key === 'approvers') {
        plan.approval = { ...(plan.approval as object), approvers: list(f) };
        this.record('/approval/approvers', f.line, f.column);
      } else if (f.key === 'quorum') {
        plan.approval = { ...(plan.approval as object), quorum: scalar(f.inline) };
        this.record('/approval/quorum', f.line, f.column);
      } else {
        context[f.key] = value;
        this.record(`/context/${f.key}`, f.line, f.column);
      }
    }
    if (Object.keys(context).length > 0) plan.context = context;
    return plan;
  }

  private secret(item: SourceLine, index: number): Record<string, unknown> {
    this.record(`/secrets/${index}`, item.number, 3);
    const m = /^`?([^:`\s]+)`?\s*:\s*`?(env|secretsmanager):([^`\s]+)`?$/.exec(item.text);
    if (m) return { name: m[1], source: m[2], ref: m[3] };
    this.problem(
      'markdown-syntax',
      'a secret is "- <name>: env:<VARIABLE>" or "- <name>: secretsmanager:<id>"',
      item.number,
      3,
    );
    return {};
  }

  private steps(sections: readonly Section[]): Array<Record<string, unknown>> {
    const mapped = sections.map((section, index) => this.step(section, index));
    // Dependencies may name later steps by number, so they resolve once every step is known.
    const idByNumber = new Map(mapped.map(({ number, step }) => [number, String(step.id)]));
    return mapped.map(({ step, dependsOn }, index) => {
      if (dependsOn) step.dependsOn = this.dependencies(dependsOn, idByNumber);
      else step.dependsOn = index === 0 ? [] : [String(mapped[index - 1]!.step.id)];
      return step;
    });
  }

  private step(section: Section, index: number): MappedStep {
    const pointer = `/steps/${index}`;
    const heading = /^(?:(\d+)[.)][ \t]*)?(?:✅[ \t]*)?(.*)$/.exec(section.heading)!;
    const number = heading[1] ?? String(index + 1);
    const description = (heading[2] ?? '').trim();
    const step: Record<string, unknown> = { description };
    this.record(pointer, section.line, 1);
    this.record(`${pointer}/description`, section.line, 5);
    const idField = section.fields.find((f) => f.key === 'id');
    step.id = idField
      ? unquote(idField.inline)
      : `s${number}-${slug(description)}`.slice(0, 64).replace(/-+$/, '') || `s${number}`;
    this.record(`${pointer}/id`, idField?.line ?? section.line, idField?.column ?? 5);
    for (const f of section.fields) this.stepField(step, f, `${pointer}/${camel(f.key)}`);
    return { step, number, dependsOn: section.fields.find((f) => f.key === 'depends_on') };
  }

  private stepField(step: Record<string, unknown>, f: Field, at: string): void {
    this.record(at, f.line, f.column);
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
      case 'args':
      case 'output_shapes':
      case 'aws':
      case 'network': {
        const block = f.fences[0];
        const parsed = block
          ? this.structured(block, at)
          : f.inline
            ? this.inlineStructured(f, at)
            : undefined;
        if (parsed !== undefined) step[camel(f.key)] = parsed;
        break;
      }
      case 'subscriptions':
      case 'outputs':
        step[f.key] = list(f);
        break;
      case 'contract':
        step.contract = this.contract(f, at);
        break;
      case 'on_fail':
        step.onFail = this.onFail(f);
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
        step.rollback = this.rollback(f, at);
        break;
      default:
        this.problem(
          'unknown-field',
          `unknown step field "${f.key}"${suggest(f.key, STEP_FIELDS)}`,
          f.line,
          1,
          at,
        );
    }
  }

  /** `1, 2`, `step 3`, `#4` are step numbers; `none` is no dependency; anything else is an id. */
  private dependencies(f: Field, idByNumber: ReadonlyMap<string, string>): string[] {
    return list(f)
      .filter((d) => !/^(none|-|\[\])$/i.test(d))
      .map((d) => {
        const n = /^(?:step[ \t]*)?#?(\d+)$/i.exec(d);
        if (!n) return d;
        const id = idByNumber.get(n[1]!);
        if (id === undefined)
          this.problem(
            'unknown-dependency',
            `depends on step ${n[1]}, which does not exist`,
            f.line,
            f.column,
          );
        return id ?? d;
      });
  }

  private postconditions(sections: readonly Section[]): Array<Record<string, unknown>> {
    return sections.map((section, i) => {
      const pointer = `/postconditions/${i}`;
      const heading = /^(?:(\d+)[.)][ \t]*)?(.*)$/.exec(section.heading)!;
      const description = (heading[2] ?? '').trim();
      const idField = section.fields.find((f) => f.key === 'id');
      const postcondition: Record<string, unknown> = {
        id: idField
          ? unquote(idField.inline)
          : `p${heading[1] ?? i + 1}-${slug(description)}`.slice(0, 64).replace(/-+$/, ''),
        description,
      };
      this.record(pointer, section.line, 1);
      this.record(`${pointer}/description`, section.line, 5);
      for (const f of section.fields) {
        const at = `${pointer}/${camel(f.key)}`;
        this.record(at, f.line, f.column);
        if (f.key === 'contract') postcondition.contract = this.contract(f, at);
        else if (!(POSTCONDITION_FIELDS as readonly string[]).includes(f.key))
          this.problem(
            'unknown-field',
            `unknown postcondition field "${f.key}"${suggest(f.key, POSTCONDITION_FIELDS)}`,
            f.line,
            1,
            at,
          );
      }
      return postcondition;
    });
  }

  /** `**contract:**` + a fenced block (shell → command, jsonata → assert, yaml/json → any kind) + `exit_code == N`. */
  private contract(f: Field, at: string): unknown {
    const block = f.fences[0];
    if (block && !SHELL_LANGS.has(block.lang) && block.lang !== 'jsonata') return this.structured(block, at);
    let contract: Record<string, unknown>;
    if (block?.lang === 'jsonata') {
      this.record(`${at}/expression`, block.line + 1);
      contract = { kind: 'assert', expression: block.body.trim() };
    } else if (block) {
      this.record(`${at}/command`, block.line + 1);
      contract = { kind: 'command', command: block.body.trim() };
    } else {
      const inline = /^`(.+)`$/.exec(f.inline);
      if (!inline) {
        this.problem(
          'markdown-syntax',
          'a contract is a fenced ```shell block (or `inline command`) after **contract:**',
          f.line,
          f.column,
          at,
        );
        return undefined;
      }
      this.record(`${at}/command`, f.line, f.column + 1);
      contract = { kind: 'command', command: inline[1] };
    }
    for (const l of [...f.text, ...f.items]) {
      const exit = /^exit_code[ \t]*==[ \t]*(\d+)$/.exec(l.text);
      const stdout = /^stdout_matches:[ \t]*`?(.*?)`?$/.exec(l.text);
      if (exit && contract.kind === 'command') {
        contract.expectExitCode = Number(exit[1]);
        this.record(`${at}/expectExitCode`, l.number);
      } else if (stdout && contract.kind === 'command') {
        contract.stdoutMatches = stdout[1];
        this.record(`${at}/stdoutMatches`, l.number, 17);
      } else
        this.problem(
          'markdown-syntax',
          `unexpected line in contract: "${l.text}" (expected "exit_code == N")`,
          l.number,
          1,
          at,
        );
    }
    return contract;
  }

  private onFail(f: Field): unknown {
    const text = f.inline.toLowerCase().replace(/`/g, '').trim();
    const m = /^(?:retry\((\d+)\))?(?:[ \t]*,?[ \t]*(?:then[ \t]+)?(escalate|abort|skip))?$/.exec(text);
    if (!m || text === '') {
      this.problem(
        'markdown-syntax',
        'on_fail is "retry(N)", "escalate", "abort", "skip" or "retry(N), then escalate|abort|skip"',
        f.line,
        f.column,
      );
      return undefined;
    }
    const escalation = m[2] === 'abort' ? 'abort' : m[2] === 'skip' ? 'skip' : 'ask';
    return { retries: m[1] === undefined ? 0 : Number(m[1]), escalation };
  }

  private rollback(f: Field, at: string): unknown {
    const block = f.fences[0];
    if (block && SHELL_LANGS.has(block.lang)) return { tool: 'shell', args: { command: block.body.trim() } };
    if (block) return this.structured(block, at);
    const inline = /^`(.+)`$/.exec(f.inline);
    if (inline) return { tool: 'shell', args: { command: inline[1] } };
    this.problem(
      'markdown-syntax',
      'a rollback is a fenced ```shell block, or a ```yaml block with tool and args',
      f.line,
      f.column,
    );
    return undefined;
  }

  /** `max 200k tokens, $1.50, 20 minutes wall clock` → tokens, costUsd, wallClockSeconds. */
  private budget(f: Field): Record<string, number> {
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
        this.problem(
          'markdown-syntax',
          `budget part "${part}" is not "<N>k tokens", "$<amount>" or "<N> minutes"`,
          f.line,
          f.column,
          '/budget',
        );
    }
    return budget;
  }

  /**
   * Parses a fenced yaml/json block; its problems are located inside the fence, and later
   * lookups under `at` are answered by the block's own source map, shifted to the fence.
   */
  private structured(block: FencedBlock, at: string): unknown {
    if (!['yaml', 'yml', 'json', ''].includes(block.lang)) {
      this.problem(
        'markdown-syntax',
        `expected a yaml or json block, not "${block.lang}"`,
        block.line,
        1,
        at,
      );
      return undefined;
    }
    const parsed = parseYaml(block.body, this.file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        this.problem(p.code, p.message, block.line + p.position.line, p.position.column, at);
      return undefined;
    }
    this.mounts.push({ prefix: at, inner: parsed.sourceMap, lineOffset: block.line });
    return parsed.value;
  }

  /** `**args:** {command: ls}`: YAML on the field's own line. */
  private inlineStructured(f: Field, at: string): unknown {
    const parsed = parseYaml(f.inline, this.file);
    if (!parsed.ok) {
      for (const p of parsed.problems)
        this.problem(p.code, p.message, f.line, f.column + p.position.column - 1, at);
      return undefined;
    }
    return parsed.value;
  }

  private record(pointer: string, line: number, column = 1): void {
    if (!this.table.has(pointer)) this.table.set(pointer, { line, column });
  }

  private problem(code: string, message: string, line: number, column = 1, pointer?: string): void {
    const { file } = this;
    this.problems.push({
      severity: 'error',
      code,
      message,
      location: pointer === undefined ? { file, line, column } : { file, line, column, pointer },
    });
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

function booleanOf(f: Field): unknown {
  const v = f.inline.toLowerCase();
  if (['true', 'yes', 'y'].includes(v)) return true;
  if (['false', 'no', 'n'].includes(v)) return false;
  return f.inline;
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
