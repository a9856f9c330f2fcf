/**
 * The Markdown plan file's first pass: text → located tokens (one per line, or one per fenced
 * block) → the file's outline: frontmatter lines, the `# title`, plan-level `**Key:**` fields,
 * and the `###` sections of steps and postconditions with their fields. It knows the Markdown
 * the format is written in and nothing of what a field means; markdown.ts maps the outline
 * onto the plan.
 *
 * The format is read line by line, not as CommonMark: a `**Key:**` line starts a new field even
 * where CommonMark would continue the previous paragraph or list item, `---` under a line of
 * text is not a heading, and indentation means nothing. So a CommonMark parser (mdast) would
 * group a plan file differently from what seed 004 and docs/plan-formats.md say.
 */

/** One line of the file, without its line ending. */
export interface SourceLine {
  readonly text: string;
  /** 1-based. */
  readonly number: number;
}

/** A closed fenced code block. */
export interface FencedBlock {
  /** The info string's first word, lowercased; `''` when there is none. */
  readonly lang: string;
  readonly body: string;
  /** Line of the opening fence. */
  readonly line: number;
}

/** A `**key:** inline` line and what follows it until the next field, heading or (for a one-line field) blank line. */
export interface Field {
  /** Lowercased, spaces and dashes as `_`: `**Depends-On:**` → `depends_on`. */
  readonly key: string;
  /** The value on the field's own line, trimmed. */
  readonly inline: string;
  readonly line: number;
  /** Column where the inline value starts. */
  readonly column: number;
  /** Lines of text below the field, trimmed. */
  readonly text: SourceLine[];
  /** `- item` lines below the field: the item's text, trimmed. */
  readonly items: SourceLine[];
  readonly fences: FencedBlock[];
}

/** A `### heading` under Steps or Postconditions, with its fields. */
export interface Section {
  readonly heading: string;
  readonly line: number;
  readonly fields: Field[];
}

export interface MarkdownOutline {
  /** The lines between the `---` markers, when the file starts with frontmatter. */
  readonly frontmatter: readonly SourceLine[] | undefined;
  /** The first `# heading`. */
  readonly title: SourceLine | undefined;
  /** Fields before the first step. */
  readonly planFields: readonly Field[];
  readonly steps: readonly Section[];
  readonly postconditions: readonly Section[];
}

/** Structure that Markdown itself gets wrong: a block opened and never closed. */
export interface MarkdownSyntaxError {
  readonly message: string;
  readonly line: number;
}

export type OutlineResult =
  | { readonly ok: true; readonly outline: MarkdownOutline; readonly errors: readonly MarkdownSyntaxError[] }
  /** Frontmatter that never ends: nothing after it can be read. */
  | { readonly ok: false; readonly error: MarkdownSyntaxError };

type Token =
  | { readonly kind: 'heading'; readonly level: number; readonly text: string; readonly line: number }
  | {
      readonly kind: 'field';
      readonly key: string;
      readonly inline: string;
      readonly line: number;
      readonly column: number;
    }
  | { readonly kind: 'fence'; readonly block: FencedBlock }
  | { readonly kind: 'item'; readonly item: SourceLine }
  | { readonly kind: 'text'; readonly text: SourceLine }
  | { readonly kind: 'blank' };

const FENCE_OPEN = /^(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]*)/;
const HEADING = /^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$/;
const FIELD_LINE = /^\*\*([A-Za-z][A-Za-z _-]*):\*\*[ \t]*(.*)$/;
const LIST_ITEM = /^[ \t]*[-*+][ \t]+(.*)$/;

/** Splits a Markdown plan into its outline, or says why it cannot. */
export function outlineMarkdownPlan(text: string): OutlineResult {
  const lines = text.split('\n').map((t, i) => ({ text: t.replace(/\r$/, ''), number: i + 1 }));
  let frontmatter: SourceLine[] | undefined;
  let body = lines;
  if (lines[0]?.text === '---') {
    const end = lines.findIndex((l, i) => i > 0 && (l.text === '---' || l.text === '...'));
    if (end === -1)
      return { ok: false, error: { message: 'frontmatter starts with "---" but never ends', line: 1 } };
    frontmatter = lines.slice(1, end);
    body = lines.slice(end + 1);
  }
  const { tokens, errors } = tokenize(body);
  const builder = new OutlineBuilder(frontmatter);
  for (const token of tokens) builder.add(token);
  return { ok: true, outline: builder.outline(), errors };
}

/** One token per line, except that a fenced block (opening fence to closing fence) is one token. */
function tokenize(lines: readonly SourceLine[]): { tokens: Token[]; errors: MarkdownSyntaxError[] } {
  const tokens: Token[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    const open = FENCE_OPEN.exec(line.text);
    if (!open) {
      tokens.push(lineToken(line));
      continue;
    }
    const marker = open[1]!;
    const close = closingFence(lines, index + 1, marker);
    // An unclosed block swallows the rest of the file, as it would in any Markdown viewer.
    if (close === -1)
      return { tokens, errors: [{ message: 'code block opened here is never closed', line: line.number }] };
    const body = lines.slice(index + 1, close).map((l) => l.text);
    tokens.push({
      kind: 'fence',
      block: { lang: (open[2] ?? '').toLowerCase(), body: body.join('\n'), line: line.number },
    });
    index = close;
  }
  return { tokens, errors: [] };
}

/** Index of the line from `from` on that closes a fence opened with `marker`, or -1. */
function closingFence(lines: readonly SourceLine[], from: number, marker: string): number {
  for (let i = from; i < lines.length; i++) {
    const trimmed = lines[i]!.text.trim();
    if (trimmed.startsWith(marker[0]!) && /^(`+|~+)$/.test(trimmed) && trimmed.length >= marker.length)
      return i;
  }
  return -1;
}

function lineToken(line: SourceLine): Token {
  const heading = HEADING.exec(line.text);
  if (heading)
    return { kind: 'heading', level: heading[1]!.length, text: heading[2] ?? '', line: line.number };
  const field = FIELD_LINE.exec(line.text);
  if (field) {
    const inline = field[2] ?? '';
    return {
      kind: 'field',
      key: field[1]!.trim().toLowerCase().replace(/[ -]+/g, '_'),
      inline: inline.trim(),
      line: line.number,
      column: line.text.length - inline.length + 1,
    };
  }
  if (line.text.trim() === '') return { kind: 'blank' };
  const item = LIST_ITEM.exec(line.text);
  if (item) return { kind: 'item', item: { text: item[1]!.trim(), number: line.number } };
  return { kind: 'text', text: { text: line.text.trim(), number: line.number } };
}

/**
 * Groups tokens by where they stand: which region (`## Steps`, `## Postconditions`, another
 * `##` section, or the plan's head before any), which `###` section and which field.
 * Anything outside a field is prose, and prose is ignored.
 */
class OutlineBuilder {
  private region: 'plan' | 'steps' | 'postconditions' | 'other' = 'plan';
  private section: Section | undefined;
  private field: Field | undefined;
  private title: SourceLine | undefined;
  private readonly planFields: Field[] = [];
  private readonly steps: Section[] = [];
  private readonly postconditions: Section[] = [];

  constructor(private readonly frontmatter: readonly SourceLine[] | undefined) {}

  add(token: Token): void {
    switch (token.kind) {
      case 'heading':
        this.heading(token.level, token.text, token.line);
        break;
      case 'field':
        this.startField(token);
        break;
      case 'fence':
        this.field?.fences.push(token.block);
        break;
      case 'item':
        this.field?.items.push(token.item);
        break;
      case 'text':
        this.field?.text.push(token.text);
        break;
      case 'blank':
        // A blank line ends a one-line field (`**Budget:** …`); a field written below its label runs on.
        if (this.field && this.field.inline !== '') this.field = undefined;
        break;
    }
  }

  outline(): MarkdownOutline {
    return {
      frontmatter: this.frontmatter,
      title: this.title,
      planFields: this.planFields,
      steps: this.steps,
      postconditions: this.postconditions,
    };
  }

  private heading(level: number, text: string, line: number): void {
    this.field = undefined;
    this.section = undefined;
    if (level === 1 && !this.title) this.title = { text, number: line };
    else if (level <= 2) {
      const name = text.toLowerCase().replace(/[^a-z]/g, '');
      this.region = name === 'steps' ? 'steps' : name === 'postconditions' ? 'postconditions' : 'other';
    } else if (level === 3 && this.region !== 'other') {
      // `###` headings before any `##` section are steps too.
      if (this.region === 'plan') this.region = 'steps';
      this.section = { heading: text, line, fields: [] };
      (this.region === 'steps' ? this.steps : this.postconditions).push(this.section);
    }
  }

  private startField(token: Extract<Token, { kind: 'field' }>): void {
    // A field belongs to a step or postcondition, or to the plan before its first section.
    if (!this.section && this.region !== 'plan') return;
    const { key, inline, line, column } = token;
    this.field = { key, inline, line, column, text: [], items: [], fences: [] };
    (this.section ? this.section.fields : this.planFields).push(this.field);
  }
}
