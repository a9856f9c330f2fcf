/**
 * From a dependency graph to sequences, Parallel branches and exact joins, with no added
 * waiting: a step starts as soon as its own dependencies are done, never later.
 *
 * `decompose` works recursively on sets of steps:
 * 1. Parallel: the weakly connected components of the set run as Parallel branches.
 * 2. Series: a connected set is cut wherever everything after the cut depends on everything
 *    before it. With depth = longest path from the set's sources, such cuts are exactly the
 *    depths k where every depth-k step depends directly on every step that is a "sink" below k
 *    (a step of depth < k none of whose successors is shallower than k); this is checked in
 *    linear time with a difference array. Blocks between cuts run in sequence.
 * 3. Otherwise (a connected set with no cut: the graph is not series-parallel here), the set
 *    becomes a tree: each step hangs under one of its dependencies (its deepest), siblings run
 *    as Parallel branches, and every other dependency that is not an ancestor in the tree is an
 *    exact join (the step waits on a token its predecessors release as they finish).
 * Series-parallel graphs therefore compile with no join at all.
 */

export type Structure =
  | { readonly kind: 'step'; readonly id: string }
  | { readonly kind: 'seq'; readonly items: readonly Structure[] }
  | { readonly kind: 'par'; readonly branches: readonly Structure[] };

export interface Decomposition {
  readonly root: Structure;
  /** Step id → the predecessors it waits for on a join (dependencies on other branches). */
  readonly joins: ReadonlyMap<string, readonly string[]>;
  /** Step id → the steps it signals when it finishes (inverse of `joins`). */
  readonly signals: ReadonlyMap<string, readonly string[]>;
}

export interface GraphNode {
  readonly id: string;
  readonly dependsOn: readonly string[];
}

/** Throws when a dependency is unknown or the graph has a cycle (validated plans have neither). */
export function decompose(nodes: readonly GraphNode[]): Decomposition {
  const graph = indexGraph(nodes);
  const joins = new Map<number, number[]>();
  const root = new Decomposer(graph, joins).build(graph.order);
  const joinIds = new Map<string, string[]>();
  const signalIds = new Map<string, string[]>();
  for (const [node, preds] of joins) {
    const id = graph.ids[node] as string;
    joinIds.set(
      id,
      preds.map((p) => graph.ids[p] as string),
    );
    for (const p of preds) {
      const pid = graph.ids[p] as string;
      const list = signalIds.get(pid) ?? [];
      list.push(id);
      signalIds.set(pid, list);
    }
  }
  return { root, joins: joinIds, signals: signalIds };
}

interface IndexedGraph {
  readonly ids: readonly string[];
  readonly preds: readonly number[][];
  readonly succs: readonly number[][];
  /** A topological order of all nodes. */
  readonly order: readonly number[];
}

function indexGraph(nodes: readonly GraphNode[]): IndexedGraph {
  const index = new Map<string, number>();
  nodes.forEach((node, i) => {
    if (index.has(node.id)) throw new Error(`steps[${i}].id: duplicate step id "${node.id}"`);
    index.set(node.id, i);
  });
  const preds = nodes.map(() => [] as number[]);
  const succs = nodes.map(() => [] as number[]);
  nodes.forEach((node, i) => {
    for (const dep of new Set(node.dependsOn)) {
      const d = index.get(dep);
      if (d === undefined) throw new Error(`steps[${i}].dependsOn: unknown step "${dep}"`);
      (preds[i] as number[]).push(d);
      (succs[d] as number[]).push(i);
    }
  });
  // Kahn's algorithm, stable in plan order.
  const indegree = preds.map((p) => p.length);
  const order: number[] = [];
  for (let i = 0; i < nodes.length; i++) if (indegree[i] === 0) order.push(i);
  for (let head = 0; head < order.length; head++) {
    for (const s of succs[order[head] as number] as number[]) {
      indegree[s] = (indegree[s] as number) - 1;
      if (indegree[s] === 0) order.push(s);
    }
  }
  if (order.length !== nodes.length) {
    const stuck = nodes.filter((_, i) => (indegree[i] as number) > 0).map((n) => n.id);
    throw new Error(`dependsOn: the dependencies form a cycle through ${stuck.join(', ')}`);
  }
  return { ids: nodes.map((n) => n.id), preds, succs, order };
}

class Decomposer {
  /** membership stamp per node: `member[v] === stamp` ⇔ v is in the set being examined. */
  private readonly member: Int32Array;
  private stamp = 0;
  private readonly depth: Int32Array;
  private readonly minSuccDepth: Int32Array;

  constructor(
    private readonly graph: IndexedGraph,
    private readonly joins: Map<number, number[]>,
  ) {
    const n = graph.ids.length;
    this.member = new Int32Array(n);
    this.depth = new Int32Array(n);
    this.minSuccDepth = new Int32Array(n);
  }

  /** `set` is in topological order; every dependency outside it is finished when it starts. */
  build(set: readonly number[]): Structure {
    if (set.length === 1) return this.step(set[0] as number);
    const components = this.components(set);
    if (components.length > 1) return par(components.map((c) => this.build(c)));
    const blocks = this.seriesBlocks(set);
    if (blocks.length > 1) return seq(blocks.map((b) => this.build(b)));
    return this.tree(set);
  }

  private step(v: number): Structure {
    return { kind: 'step', id: this.graph.ids[v] as string };
  }

  private enter(set: readonly number[]): number {
    this.stamp += 1;
    for (const v of set) this.member[v] = this.stamp;
    return this.stamp;
  }

  private components(set: readonly number[]): number[][] {
    const stamp = this.enter(set);
    const parent = new Map<number, number>();
    const find = (v: number): number => {
      let r = v;
      while (parent.get(r) !== r) r = parent.get(r) as number;
      let x = v;
      while (x !== r) {
        const next = parent.get(x) as number;
        parent.set(x, r);
        x = next;
      }
      return r;
    };
    for (const v of set) parent.set(v, v);
    for (const v of set) {
      for (const p of this.graph.preds[v] as number[]) {
        if (this.member[p] !== stamp) continue;
        const a = find(v);
        const b = find(p);
        if (a !== b) parent.set(a, b);
      }
    }
    const groups = new Map<number, number[]>();
    for (const v of set) {
      const r = find(v);
      const group = groups.get(r);
      if (group) group.push(v);
      else groups.set(r, [v]);
    }
    return [...groups.values()];
  }

  /** The set split at every series cut (one block when there is none). */
  private seriesBlocks(set: readonly number[]): number[][] {
    const stamp = this.enter(set);
    const { preds, succs } = this.graph;
    let maxDepth = 0;
    for (const v of set) {
      let d = 0;
      for (const p of preds[v] as number[]) {
        if (this.member[p] === stamp) d = Math.max(d, (this.depth[p] as number) + 1);
      }
      this.depth[v] = d;
      maxDepth = Math.max(maxDepth, d);
    }
    const none = maxDepth + 1;
    for (const v of set) {
      let m = none;
      for (const s of succs[v] as number[]) {
        if (this.member[s] === stamp) m = Math.min(m, this.depth[s] as number);
      }
      this.minSuccDepth[v] = m;
    }
    // sinkCount[k]: steps x with depth(x) < k <= minSuccDepth(x), i.e. the sinks below level k.
    const delta = new Int32Array(maxDepth + 2);
    for (const v of set) {
      const from = (this.depth[v] as number) + 1;
      const to = Math.min(this.minSuccDepth[v] as number, maxDepth) + 1;
      if (from < to) {
        delta[from] = (delta[from] as number) + 1;
        delta[to] = (delta[to] as number) - 1;
      }
    }
    const sinkCount = new Int32Array(maxDepth + 1);
    let running = 0;
    for (let k = 1; k <= maxDepth; k++) {
      running += delta[k] as number;
      sinkCount[k] = running;
    }
    const isCut = new Uint8Array(maxDepth + 1).fill(1);
    isCut[0] = 0;
    for (const w of set) {
      const k = this.depth[w] as number;
      if (k === 0 || !isCut[k]) continue;
      let direct = 0;
      for (const p of preds[w] as number[]) {
        if (this.member[p] === stamp && this.minSuccDepth[p] === k) direct += 1;
      }
      if (direct !== sinkCount[k]) isCut[k] = 0;
    }
    const blockOf = new Int32Array(maxDepth + 1);
    let block = 0;
    for (let k = 0; k <= maxDepth; k++) {
      if (isCut[k]) block += 1;
      blockOf[k] = block;
    }
    if (block === 0) return [set.slice()];
    const blocks: number[][] = Array.from({ length: block + 1 }, () => []);
    for (const v of set) (blocks[blockOf[this.depth[v] as number] as number] as number[]).push(v);
    return blocks;
  }

  /** The no-cut case: a spanning forest of the set plus exact joins for the other edges. */
  private tree(set: readonly number[]): Structure {
    const stamp = this.enter(set);
    const { preds } = this.graph;
    // depth[] is still valid for this set: seriesBlocks ran on it just before.
    const parent = new Map<number, number>();
    const children = new Map<number, number[]>();
    const roots: number[] = [];
    for (const v of set) {
      let best = -1;
      for (const p of preds[v] as number[]) {
        if (this.member[p] !== stamp) continue;
        if (best < 0 || (this.depth[p] as number) > (this.depth[best] as number)) best = p;
      }
      if (best < 0) roots.push(v);
      else {
        parent.set(v, best);
        const list = children.get(best);
        if (list) list.push(v);
        else children.set(best, [v]);
      }
    }
    // Euler-tour intervals answer "is p an ancestor of v in the tree" in O(1).
    const tin = new Map<number, number>();
    const tout = new Map<number, number>();
    let clock = 0;
    for (const r of roots) {
      const stack: [number, number][] = [[r, 0]];
      tin.set(r, clock++);
      while (stack.length > 0) {
        const top = stack[stack.length - 1] as [number, number];
        const kids = children.get(top[0]) ?? [];
        if (top[1] < kids.length) {
          const c = kids[top[1]] as number;
          top[1] += 1;
          tin.set(c, clock++);
          stack.push([c, 0]);
        } else {
          tout.set(top[0], clock++);
          stack.pop();
        }
      }
    }
    const isAncestor = (a: number, v: number) =>
      (tin.get(a) as number) <= (tin.get(v) as number) && (tout.get(v) as number) <= (tout.get(a) as number);
    for (const v of set) {
      const waits = (preds[v] as number[]).filter(
        (p) => this.member[p] === stamp && p !== parent.get(v) && !isAncestor(p, v),
      );
      if (waits.length > 0) this.joins.set(v, waits);
    }
    // Children come after parents in topological order: build subtrees bottom-up, no recursion.
    const built = new Map<number, Structure>();
    for (let i = set.length - 1; i >= 0; i--) {
      const v = set[i] as number;
      const kids = (children.get(v) ?? []).map((c) => built.get(c) as Structure);
      built.set(
        v,
        kids.length === 0
          ? this.step(v)
          : seq([this.step(v), kids.length === 1 ? (kids[0] as Structure) : par(kids)]),
      );
      for (const c of children.get(v) ?? []) built.delete(c);
    }
    const top = roots.map((r) => built.get(r) as Structure);
    return top.length === 1 ? (top[0] as Structure) : par(top);
  }
}

function seq(items: readonly Structure[]): Structure {
  const flat: Structure[] = [];
  for (const item of items) {
    if (item.kind === 'seq') flat.push(...item.items);
    else flat.push(item);
  }
  return flat.length === 1 ? (flat[0] as Structure) : { kind: 'seq', items: flat };
}

function par(branches: readonly Structure[]): Structure {
  return branches.length === 1 ? (branches[0] as Structure) : { kind: 'par', branches };
}
