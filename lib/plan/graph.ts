/**
 * The step dependency graph, by index: `deps[i]` lists the steps step i depends on.
 * Everything here is iterative and linear (or chunked-linear) so a 100,000-step chain
 * or a 10,000-step cycle takes milliseconds and cannot overflow the stack.
 */

/**
 * One cycle per strongly connected component that has one (Tarjan, iterative). Each
 * cycle lists step indexes in dependency order: step c[0] depends on c[1], …, the last
 * depends on c[0].
 */
export function findCycles(deps: readonly (readonly number[])[]): number[][] {
  const n = deps.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const component = new Int32Array(n).fill(-1);
  const stack: number[] = [];
  const cycles: number[][] = [];
  let counter = 0;
  let components = 0;
  const work: Array<{ node: number; edge: number }> = [];
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    work.push({ node: root, edge: 0 });
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = deps[frame.node]!;
      if (frame.edge < edges.length) {
        const next = edges[frame.edge++]!;
        if (index[next] === -1) {
          index[next] = low[next] = counter++;
          stack.push(next);
          onStack[next] = 1;
          work.push({ node: next, edge: 0 });
        } else if (onStack[next]) low[frame.node] = Math.min(low[frame.node]!, index[next]!);
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low[parent.node] = Math.min(low[parent.node]!, low[frame.node]!);
      if (low[frame.node] !== index[frame.node]) continue;
      const members: number[] = [];
      let member: number;
      do {
        member = stack.pop()!;
        onStack[member] = 0;
        component[member] = components;
        members.push(member);
      } while (member !== frame.node);
      const selfLoop = members.length === 1 && edges.includes(frame.node);
      if (members.length > 1 || selfLoop)
        cycles.push(
          cycleWithin(
            members.reduce((a, b) => Math.min(a, b)),
            components,
            deps,
            component,
          ),
        );
      components++;
    }
  }
  return cycles.sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0));
}

/** Walks dependencies inside one component from `start` until a step repeats. */
function cycleWithin(
  start: number,
  id: number,
  deps: readonly (readonly number[])[],
  component: Int32Array,
): number[] {
  const seenAt = new Map<number, number>();
  const path: number[] = [];
  let node = start;
  while (!seenAt.has(node)) {
    seenAt.set(node, path.length);
    path.push(node);
    node = deps[node]!.find((d) => component[d] === id)!;
  }
  return path.slice(seenAt.get(node));
}

/** Dependencies before dependents (Kahn). Undefined when the graph has a cycle. */
export function topologicalOrder(deps: readonly (readonly number[])[]): number[] | undefined {
  const n = deps.length;
  const pending = new Int32Array(n);
  const dependents: number[][] = Array.from({ length: n }, () => []);
  deps.forEach((ds, i) => {
    pending[i] = ds.length;
    for (const d of ds) dependents[d]!.push(i);
  });
  const order: number[] = [];
  for (let i = 0; i < n; i++) if (pending[i] === 0) order.push(i);
  for (let k = 0; k < order.length; k++) {
    for (const next of dependents[order[k]!]!) if (--pending[next]! === 0) order.push(next);
  }
  return order.length === n ? order : undefined;
}

/**
 * For each query [from, to]: is `to` a transitive dependency of `from`? Direct edges
 * answer most queries; the rest are answered by propagating bitsets of the queried
 * targets along the topological order, 1,024 targets per pass.
 */
export function dependsTransitively(
  deps: readonly (readonly number[])[],
  order: readonly number[],
  queries: ReadonlyArray<readonly [from: number, to: number]>,
): boolean[] {
  const answers = queries.map(([from, to]) => deps[from]!.includes(to));
  const open = queries.map((_, i) => i).filter((i) => !answers[i]);
  const targets = [...new Set(open.map((i) => queries[i]![1]))];
  const WORDS = 32;
  for (let start = 0; start < targets.length; start += WORDS * 32) {
    const chunk = targets.slice(start, start + WORDS * 32);
    const bitOf = new Map(chunk.map((t, i) => [t, i]));
    const bits = new Uint32Array(deps.length * WORDS);
    for (const node of order) {
      const base = node * WORDS;
      for (const d of deps[node]!) {
        const dBase = d * WORDS;
        for (let w = 0; w < WORDS; w++) bits[base + w]! |= bits[dBase + w]!;
        const bit = bitOf.get(d);
        if (bit !== undefined) bits[base + (bit >> 5)]! |= 1 << (bit & 31);
      }
    }
    for (const q of open) {
      const [from, to] = queries[q]!;
      const bit = bitOf.get(to);
      if (bit !== undefined && (bits[from * WORDS + (bit >> 5)]! & (1 << (bit & 31))) !== 0)
        answers[q] = true;
    }
  }
  return answers;
}
