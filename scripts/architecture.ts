/**
 * The architecture as data, and the check that the code keeps to it: no import cycles between
 * files, and every import points down the layers (docs/architecture.md draws them).
 *
 * `npm run architecture` prints every problem (exit 1) or a one-line summary; the suite runs the
 * same check (tests/architecture.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Layers, top first. A file may import files of its own unit and of units in lower layers only;
 * units that share a layer do not import each other. A unit is the longest listed folder (or
 * file) that holds the file, so lib/runtime's own layers refine the lib/runtime entry.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['bin'],
  ['lib/cli'],
  ['lib/audit'],
  ['lib/run'],
  ['lib/serve', 'lib/cdk'],
  ['lambdas'],
  ['lib/launch', 'lib/files', 'lib/worker'],
  ['lib/compiler', 'lib/planner'],
  ['lib/aws-local'],
  ['lib/runtime/api'],
  ['lib/runtime/notify'],
  ['lib/runtime/gate'],
  ['lib/runtime/contracts'],
  ['lib/runtime/steps'],
  ['lib/runtime/recovery'],
  ['lib/runtime/deps.ts'],
  ['lib/runtime/tools'],
  ['lib/runtime/telemetry'],
  ['lib/runtime/journal'],
  ['lib/runtime/secrets'],
  ['lib/policy'],
  ['lib/runtime/catalog.ts'],
  ['lib/runtime/shared', 'lib/runtime/payloads'],
  ['lib/runtime/sandbox'],
  ['lib/engine', 'lib/plan'],
  ['lib/loopback'],
];

/** Folders whose files the checks cover (tests, benchmarks and scripts sit outside the layers). */
export const SOURCE_ROOTS = ['bin', 'lib', 'lambdas'] as const;

export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** Relative specifiers a module imports: static, re-exported, side-effect and literal `import()`. */
export function importSpecifiers(source: string): string[] {
  const code = withoutComments(source);
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns)
    for (const match of code.matchAll(pattern)) if (match[1]?.startsWith('.')) found.push(match[1]);
  return found;
}

/**
 * The source with comments dropped and every string blanked except module specifiers (a string
 * right after `from`, `import` or `import(`), so text that only looks like an import does not count.
 */
function withoutComments(source: string): string {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const ch = source[i] as string;
    const next = source[i + 1];
    if (ch === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (ch === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end === -1 ? source.length : end + 2;
    } else if (ch === "'" || ch === '"' || ch === '`') {
      let j = i + 1;
      while (j < source.length && source[j] !== ch) j += source[j] === '\\' ? 2 : 1;
      const isSpecifier = /(?:\bfrom|\bimport|\bimport\s*\()\s*$/.test(out.slice(-20));
      out += isSpecifier ? source.slice(i, j + 1) : `${ch}${ch}`;
      i = j + 1;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

/** Every .ts file under the roots (relative, POSIX) → the repository files it imports. */
export function readImportGraph(repoRoot: string, roots: readonly string[] = SOURCE_ROOTS): ImportGraph {
  const graph = new Map<string, string[]>();
  for (const root of roots) {
    for (const file of listTypeScript(path.join(repoRoot, root))) {
      const relativeFile = path.relative(repoRoot, file).split(path.sep).join('/');
      const targets = importSpecifiers(readFileSync(file, 'utf8')).map((spec) =>
        path.posix.normalize(path.posix.join(path.posix.dirname(relativeFile), spec)),
      );
      graph.set(relativeFile, targets);
    }
  }
  return graph;
}

function listTypeScript(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return listTypeScript(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Each import cycle once, as the files around it (first file repeated at the end). */
export function findCycles(graph: ImportGraph): string[][] {
  // Tarjan's strongly connected components; a component of more than one file (or a file that
  // imports itself) holds at least one cycle, reported as one concrete loop through it.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) as number, index.get(target) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    const selfImport = (graph.get(file) ?? []).includes(file);
    if (component.length > 1 || selfImport) cycles.push(loopWithin(graph, new Set(component), file));
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return cycles;
}

/** A shortest loop from `start` back to itself inside one strongly connected component. */
function loopWithin(graph: ImportGraph, component: ReadonlySet<string>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    for (const target of graph.get(file) ?? []) {
      if (!component.has(target)) continue;
      if (target === start) {
        const loop = [start];
        for (let at: string | undefined = file; at !== undefined && at !== start; at = previous.get(at))
          loop.splice(1, 0, at);
        return [...loop, start];
      }
      if (!previous.has(target) && target !== start) {
        previous.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

/** The unit (a LAYERS entry) that holds a file, with its layer's index; undefined outside the layers. */
export function unitOf(
  file: string,
  layers: readonly (readonly string[])[] = LAYERS,
): { unit: string; layer: number } | undefined {
  let best: { unit: string; layer: number } | undefined;
  layers.forEach((units, layer) => {
    for (const unit of units)
      if ((file === unit || file.startsWith(`${unit}/`)) && unit.length > (best?.unit.length ?? -1))
        best = { unit, layer };
  });
  return best;
}

export interface LayerViolation {
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

/** Imports that point up the layers, or sideways between units of one layer. */
export function findLayerViolations(
  graph: ImportGraph,
  layers: readonly (readonly string[])[] = LAYERS,
): LayerViolation[] {
  const violations: LayerViolation[] = [];
  for (const [from, targets] of graph) {
    const source = unitOf(from, layers);
    if (!source) continue;
    for (const to of targets) {
      const target = unitOf(to, layers);
      if (!target || target.unit === source.unit) continue;
      if (target.layer < source.layer)
        violations.push({ from, to, why: `${source.unit} may not import ${target.unit} (a higher layer)` });
      else if (target.layer === source.layer)
        violations.push({ from, to, why: `${source.unit} and ${target.unit} share a layer` });
    }
  }
  return violations;
}

/** Files under the roots that no LAYERS entry holds: a new folder must be placed in the layers. */
export function filesOutsideLayers(graph: ImportGraph, layers = LAYERS): string[] {
  return [...graph.keys()].filter((file) => unitOf(file, layers) === undefined).sort();
}

function main(): number {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const graph = readImportGraph(repoRoot);
  const problems = [
    ...findCycles(graph).map((cycle) => `import cycle: ${cycle.join(' → ')}`),
    ...findLayerViolations(graph).map((v) => `${v.from} imports ${v.to}: ${v.why}`),
    ...filesOutsideLayers(graph).map((file) => `${file} is in no layer (add its folder to LAYERS)`),
  ];
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  if (problems.length > 0) return 1;
  const edges = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
  process.stdout.write(
    `${graph.size} files, ${edges} imports: no cycles, every import points down the layers\n`,
  );
  return 0;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  process.exitCode = main();
