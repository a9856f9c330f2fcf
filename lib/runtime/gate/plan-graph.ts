/**
 * The plan's dependency graph as a picture: DOT source laid out by Graphviz (compiled to
 * WebAssembly, loaded once per process) into SVG on the server, so the page needs no script.
 * Step ids and names are the plan author's text: every label is escaped for DOT, and the SVG
 * Graphviz returns is rebuilt from an allowlist of elements and attributes (shapes, text, no
 * links, no scripts, no foreignObject, no event handlers, no styles) before it reaches a page.
 */
import { visibleText } from '../../plan/visible-text.ts';
import { escapeHtml } from '../shared/html.ts';

/** One node of the graph: a step, what it waits for, and the risks the harness marks on it. */
export interface GraphStep {
  readonly id: string;
  /** The step's description on one line. */
  readonly name: string;
  readonly dependsOn?: readonly string[];
  /** Its own call changes or deletes things: red border and "⚠". */
  readonly destructive?: boolean;
  /** Its own call's effect is unknown (not proven read-only, not known destructive): "⚠". */
  readonly effectUnknown?: boolean;
  /** It has its own approval gate right before it runs. */
  readonly ownGate?: boolean;
  /** The step a step gate asks about: drawn with a thick border. */
  readonly current?: boolean;
}

/** Longest label line, in characters; longer names wrap (at most {@link MAX_NAME_LINES} lines). */
const LINE_CHARS = 30;
const MAX_NAME_LINES = 3;
const DESTRUCTIVE_COLOR = '#b00020';

/**
 * The graph as DOT. Nodes are named `s1`, `s2`, … (never the author's text); each label is a DOT
 * string in which the author's text can neither end the string nor start an escape.
 */
export function dotSource(steps: readonly GraphStep[]): string {
  const node = new Map(steps.map((step, i) => [step.id, `s${i + 1}`]));
  const lines = [
    'digraph plan {',
    '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.3, ranksep=0.35, margin=0];',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#555555", fontname="Helvetica", fontsize=12, margin="0.15,0.06"];',
    '  edge [color="#555555", arrowsize=0.7];',
  ];
  steps.forEach((step, i) => {
    const label = [
      `${step.destructive || step.effectUnknown ? '⚠ ' : ''}${step.id}`,
      ...wrapped(visibleText(step.name)),
      ...(step.ownGate ? ['[asks approval first]'] : []),
    ]
      .map(dotText)
      .join('\\n');
    const attributes = [
      `label="${label}"`,
      ...(step.destructive ? [`color="${DESTRUCTIVE_COLOR}"`, 'penwidth=2', 'fillcolor="#fdecee"'] : []),
      ...(step.ownGate ? ['peripheries=2'] : []),
      // Not bold: the browser's bold text is wider than Graphviz measures it and would overflow.
      ...(step.current ? ['penwidth=3', ...(step.destructive ? [] : ['fillcolor="#eef3fd"'])] : []),
    ];
    lines.push(`  s${i + 1} [${attributes.join(', ')}];`);
  });
  steps.forEach((step, i) => {
    for (const dependency of step.dependsOn ?? []) {
      const from = node.get(dependency);
      if (from) lines.push(`  ${from} -> s${i + 1};`);
    }
  });
  lines.push('}');
  return lines.join('\n');
}

/**
 * Text inside a DOT label string: `&` starts an entity for Graphviz (so it is one), `\` starts
 * an escape (so it is doubled), `"` ends the string (so it is escaped); line breaks and other
 * control characters become spaces (the label's own breaks are added as `\n` after this).
 */
export function dotText(text: string): string {
  return text
    .replace(/[\p{Cc}\u2028\u2029]/gu, ' ')
    .replace(/&/g, '&amp;')
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"');
}

/** A name as label lines of at most {@link LINE_CHARS} characters, broken between words where it can be. */
function wrapped(name: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of name.split(/\s+/).filter(Boolean)) {
    for (let rest = word; rest !== ''; ) {
      const room = line === '' ? LINE_CHARS : LINE_CHARS - line.length - 1;
      if ([...rest].length <= room) {
        line = line === '' ? rest : `${line} ${rest}`;
        rest = '';
      } else if (line !== '') {
        lines.push(line);
        line = '';
      } else {
        lines.push([...rest].slice(0, LINE_CHARS).join(''));
        rest = [...rest].slice(LINE_CHARS).join('');
      }
    }
  }
  if (line !== '') lines.push(line);
  if (lines.length <= MAX_NAME_LINES) return lines;
  const kept = lines.slice(0, MAX_NAME_LINES);
  kept[MAX_NAME_LINES - 1] =
    `${[...(kept[MAX_NAME_LINES - 1] as string)].slice(0, LINE_CHARS - 1).join('')}…`;
  return kept;
}

/**
 * Most steps drawn: a larger graph takes seconds to lay out and is too small to read on a
 * screen; its list says the same.
 */
export const MAX_DRAWN_STEPS = 150;

type Graphviz = { dot(source: string): string };
let graphviz: Promise<Graphviz> | undefined;

/** Graphviz, loaded on first use and kept for the process (the first load takes ~150 ms, later layouts a few). */
function loadGraphviz(): Promise<Graphviz> {
  graphviz ??= import('@hpcc-js/wasm-graphviz').then(({ Graphviz }) => Graphviz.load());
  graphviz.catch(() => {
    graphviz = undefined;
  });
  return graphviz;
}

/**
 * The graph as sanitized inline SVG, hidden from screen readers (the page lists the same graph
 * as text). Undefined when there is nothing to draw, more than {@link MAX_DRAWN_STEPS} steps,
 * or Graphviz cannot lay it out: the page then shows the list alone.
 */
export async function graphSvg(steps: readonly GraphStep[]): Promise<string | undefined> {
  if (steps.length === 0 || steps.length > MAX_DRAWN_STEPS) return undefined;
  try {
    return sanitizeSvg((await loadGraphviz()).dot(dotSource(steps)));
  } catch {
    return undefined;
  }
}

/** Numbers, lists of numbers, and path data: digits, separators, signs and path commands only. */
const NUMBERS = /^[-+0-9.,eE\s]*$/;
const LENGTH = /^[0-9.]+(?:pt|px)?$/;
const PATH_DATA = /^[-+0-9.,eE\sMmLlHhVvCcSsQqTtAaZz]*$/;
const COLOR = /^(?:#[0-9a-fA-F]{3,8}|[a-zA-Z]{1,20})$/;
const TRANSFORM = /^(?:\s*(?:scale|rotate|translate)\([-+0-9.,eE\s]*\))*\s*$/;
const SHAPE = { fill: COLOR, stroke: COLOR, 'stroke-width': NUMBERS, 'stroke-dasharray': NUMBERS };

/** Each element kept, and each attribute it keeps with the values it may take; anything else is dropped. */
const ALLOWED: Record<string, Record<string, RegExp>> = {
  svg: { width: LENGTH, height: LENGTH, viewBox: NUMBERS },
  g: { class: /^(?:graph|node|edge)$/, transform: TRANSFORM },
  path: { ...SHAPE, d: PATH_DATA },
  polygon: { ...SHAPE, points: NUMBERS },
  polyline: { ...SHAPE, points: NUMBERS },
  ellipse: { ...SHAPE, cx: NUMBERS, cy: NUMBERS, rx: NUMBERS, ry: NUMBERS },
  text: {
    'text-anchor': /^(?:start|middle|end)$/,
    x: NUMBERS,
    y: NUMBERS,
    'font-family': /^[A-Za-z0-9 ,-]+$/,
    'font-size': NUMBERS,
    'font-weight': /^(?:bold|normal|[0-9]{3})$/,
    fill: COLOR,
  },
};
/** Elements dropped with everything inside them (tooltips naming `s1`, `s2`, …). */
const DROPPED = new Set(['title']);

const TOKEN =
  /<!--[\s\S]*?-->|<\?[^>]*\?>|<!DOCTYPE[^>]*>|<\/([A-Za-z][\w:-]*)\s*>|<([A-Za-z][\w:-]*)((?:\s+[\w:-]+\s*=\s*"[^"<]*")*)\s*(\/?)>|([^<]+)/y;
const ATTRIBUTE = /\s+([\w:-]+)\s*=\s*"([^"<]*)"/g;

/**
 * Rebuilds Graphviz's SVG from the allowlist: every kept attribute value and every text is
 * decoded and escaped again, so nothing in the output is markup that was not written here.
 * Throws on anything that is not plain, well-nested SVG of the allowed elements.
 */
export function sanitizeSvg(svg: string): string {
  const out: string[] = [];
  const open: string[] = [];
  let droppedDepth = 0;
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < svg.length) {
    const match = TOKEN.exec(svg);
    if (!match) throw new Error(`unexpected SVG at ${TOKEN.lastIndex}`);
    const [token, closing, name, attributes = '', selfClosing, text] = match;
    if (text !== undefined) {
      if (droppedDepth === 0 && open.length > 0 && text.trim() !== '') {
        if (open.at(-1) !== 'text') throw new Error('text outside a <text> element');
        out.push(escapeHtml(decodeXml(text)));
      }
    } else if (closing !== undefined) {
      if (open.pop() !== closing) throw new Error(`unbalanced </${closing}>`);
      if (droppedDepth > 0) droppedDepth--;
      else out.push(`</${closing}>`);
    } else if (name !== undefined) {
      if (droppedDepth > 0 || DROPPED.has(name)) {
        if (!selfClosing) {
          open.push(name);
          droppedDepth++;
        }
        continue;
      }
      const allowed = ALLOWED[name];
      if (!allowed) throw new Error(`<${name}> is not allowed in the graph`);
      if ((name === 'svg') !== (open.length === 0) || (name === 'svg' && out.length > 0))
        throw new Error('one <svg> holds everything');
      const kept: string[] = [];
      for (const [, attribute, raw] of attributes.matchAll(ATTRIBUTE)) {
        const value = decodeXml(raw ?? '');
        const pattern = Object.hasOwn(allowed, attribute as string)
          ? allowed[attribute as string]
          : undefined;
        if (pattern?.test(value)) kept.push(` ${attribute}="${escapeHtml(value)}"`);
      }
      if (name === 'svg') kept.push(' class="plan-graph" aria-hidden="true" focusable="false"');
      if (selfClosing) out.push(`<${name}${kept.join('')}/>`);
      else {
        open.push(name);
        out.push(`<${name}${kept.join('')}>`);
      }
    } else if (open.length > 0 && !token.startsWith('<!--')) {
      throw new Error('a declaration inside the SVG');
    }
  }
  if (open.length > 0 || out.length === 0) throw new Error('the SVG is incomplete');
  return out.join('');
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML character references and the five named entities, decoded; anything else stays as written. */
function decodeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[ref] ?? whole;
  });
}
