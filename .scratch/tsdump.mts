import { parseBash } from '/work/wt-shell/lib/plan/shell/grammar.ts';
const src = process.argv[2]!;
const tree = parseBash(src, performance.now() + 1000)!;
console.log(tree.rootNode.toString());
function walk(n: any, d: number, field?: string) {
  console.log(`${'  '.repeat(d)}${field ? field + ': ' : ''}${n.type} [${n.startIndex},${n.endIndex}] ${JSON.stringify(src.slice(n.startIndex, n.endIndex)).slice(0, 50)}`);
  for (let i = 0; i < n.childCount; i++) walk(n.child(i), d + 1, n.fieldNameForChild(i) ?? undefined);
}
walk(tree.rootNode, 0);
