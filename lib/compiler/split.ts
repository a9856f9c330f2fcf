/**
 * Splitting a large plan into child state machines. Any block of the structure (a step
 * sequence, a Parallel) can move into its own machine, started from the parent with
 * `states:startExecution.sync:2`: the parent waits exactly as long as the block ran, so timing
 * stays exact, and joins keep working across machines because the join Lambda is keyed by the
 * parent's execution id. Blocks are packed greedily, bottom-up, until every machine's estimated
 * history and definition size are within budget.
 */
import { HISTORY_EVENTS } from './states/index.ts';
import type { Structure } from './structure.ts';

export type Layout =
  | { readonly kind: 'step'; readonly id: string }
  | { readonly kind: 'seq'; readonly items: readonly Layout[] }
  | { readonly kind: 'par'; readonly branches: readonly Layout[] }
  /** A block moved into child machine number `part` (1-based). */
  | { readonly kind: 'child'; readonly part: number; readonly body: Layout };

export interface Size {
  readonly events: number;
  readonly bytes: number;
}

/** What a Parallel, one of its branches, and a child-machine task add (the bytes roughly). */
export const OVERHEAD = {
  parallel: { events: HISTORY_EVENTS.parallel, bytes: 400 },
  /** A branch's Fail states and shared escalation states. */
  branch: { events: 0, bytes: 3_500 },
  childTask: { events: HISTORY_EVENTS.childExecution, bytes: 900 },
} as const;

export interface SplitProps {
  /** Size of each step's states. */
  readonly stepSize: (id: string) => Size;
  /** Budget of one machine (after its fixed states). */
  readonly budget: Size;
}

export class Splitter {
  private parts = 0;

  constructor(private readonly props: SplitProps) {}

  /** Number of child machines created so far. */
  get partCount(): number {
    return this.parts;
  }

  sizeOf(layout: Layout): Size {
    switch (layout.kind) {
      case 'step':
        return this.props.stepSize(layout.id);
      case 'child':
        return OVERHEAD.childTask;
      case 'seq':
        return sum(layout.items.map((i) => this.sizeOf(i)));
      case 'par':
        return add(
          add(OVERHEAD.parallel, sum(layout.branches.map((b) => this.sizeOf(b)))),
          scale(OVERHEAD.branch, layout.branches.length),
        );
    }
  }

  /** The layout with blocks moved into child machines until it fits the budget. */
  fit(structure: Structure): Layout {
    return this.outline(structure).layout;
  }

  private fits(size: Size): boolean {
    return size.events <= this.props.budget.events && size.bytes <= this.props.budget.bytes;
  }

  private outline(node: Structure | Layout): { layout: Layout; size: Size } {
    if (node.kind === 'step' || node.kind === 'child') return { layout: node, size: this.sizeOf(node) };
    const parts = (node.kind === 'seq' ? node.items : node.branches).map((p) => this.outline(p));
    const extra =
      node.kind === 'par' ? (n: number) => add(OVERHEAD.parallel, scale(OVERHEAD.branch, n)) : () => ZERO;
    const whole = add(sum(parts.map((p) => p.size)), extra(parts.length));
    const rebuild = (items: Layout[]): Layout =>
      node.kind === 'seq' ? { kind: 'seq', items } : { kind: 'par', branches: items };
    if (this.fits(whole)) return { layout: rebuild(parts.map((p) => p.layout)), size: whole };
    // Pack consecutive parts into groups that each fit one machine; each group becomes a child.
    const groups: { items: Layout[]; size: Size }[] = [];
    let current: { items: Layout[]; size: Size } = { items: [], size: ZERO };
    for (const part of parts) {
      const grown = add(add(current.size, part.size), extra(current.items.length + 1));
      if (current.items.length > 0 && !this.fits(grown)) {
        groups.push(current);
        current = { items: [], size: ZERO };
      }
      current.items.push(part.layout);
      current.size = add(current.size, part.size);
    }
    if (current.items.length > 0) groups.push(current);
    const items = groups.map((g): Layout => {
      const only = g.items[0] as Layout;
      if (g.items.length === 1 && (only.kind === 'child' || only.kind === 'step')) return only;
      this.parts += 1;
      return { kind: 'child', part: this.parts, body: g.items.length === 1 ? only : rebuild(g.items) };
    });
    const layout = items.length === 1 ? (items[0] as Layout) : rebuild(items);
    return { layout, size: this.sizeOf(layout) };
  }
}

const ZERO: Size = { events: 0, bytes: 0 };

function add(a: Size, b: Size): Size {
  return { events: a.events + b.events, bytes: a.bytes + b.bytes };
}

function scale(a: Size, n: number): Size {
  return { events: a.events * n, bytes: a.bytes * n };
}

function sum(sizes: readonly Size[]): Size {
  return sizes.reduce(add, ZERO);
}
