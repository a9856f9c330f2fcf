import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  filesOutsideLayers,
  findCycles,
  findLayerViolations,
  importSpecifiers,
  readImportGraph,
  unitOf,
} from '../scripts/architecture.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('the import graph of bin/, lib/ and lambdas/', () => {
  const graph = readImportGraph(REPO);

  it('has no import cycles', () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it('points every import down the layers of scripts/architecture.ts', () => {
    expect(findLayerViolations(graph)).toEqual([]);
    expect(filesOutsideLayers(graph)).toEqual([]);
  });

  it('sees the imports it checks (a graph read wrong would pass vacuously)', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('lib/runtime/gate/gate.ts')).toContain('lib/runtime/gate/approvals.ts');
    expect(graph.get('bin/plangate.ts')).toContain('lib/cli/run.ts');
  });
});

describe('the checks themselves', () => {
  const layers = [['app'], ['lib/a', 'lib/b'], ['lib/base']];

  it('reads static, type-only, re-exported, side-effect and literal dynamic imports, not commented ones', () => {
    const source = [
      "import { x } from './x.ts';",
      "import type {\n  Y,\n} from '../y.ts';",
      "export * from './z.ts';",
      "import './side.ts';",
      "const m = await import('./lazy.ts');",
      "// import { no } from './commented.ts';",
      "/* import { no } from './block.ts'; */",
      'const s = \'import { no } from "./string-only"\';',
      "import { readFileSync } from 'node:fs';",
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual([
      '../y.ts',
      './lazy.ts',
      './side.ts',
      './x.ts',
      './z.ts',
    ]);
  });

  it('finds a cycle and names its files in order', () => {
    const graph = new Map([
      ['lib/a/one.ts', ['lib/a/two.ts']],
      ['lib/a/two.ts', ['lib/a/three.ts']],
      ['lib/a/three.ts', ['lib/a/one.ts']],
      ['lib/a/four.ts', ['lib/a/one.ts']],
    ]);
    expect(findCycles(graph)).toEqual([['lib/a/one.ts', 'lib/a/two.ts', 'lib/a/three.ts', 'lib/a/one.ts']]);
  });

  it('refuses imports up the layers and sideways within a layer, allows down and within a unit', () => {
    const graph = new Map([
      ['app/main.ts', ['lib/a/x.ts', 'lib/base/y.ts']],
      ['lib/a/x.ts', ['lib/a/w.ts', 'lib/base/y.ts', 'lib/b/z.ts']],
      ['lib/base/y.ts', ['app/main.ts']],
    ]);
    expect(findLayerViolations(graph, layers)).toEqual([
      { from: 'lib/a/x.ts', to: 'lib/b/z.ts', why: 'lib/a and lib/b share a layer' },
      { from: 'lib/base/y.ts', to: 'app/main.ts', why: 'lib/base may not import app (a higher layer)' },
    ]);
  });

  it('places a file in its longest listed unit, and reports files no unit holds', () => {
    expect(unitOf('lib/runtime/gate/gate.ts')?.unit).toBe('lib/runtime/gate');
    expect(unitOf('lib/runtime/deps.ts')?.unit).toBe('lib/runtime/deps.ts');
    expect(unitOf('lib/compiler/asl.ts')?.unit).toBe('lib/compiler');
    expect(filesOutsideLayers(new Map([['lib/new/x.ts', []]]), layers)).toEqual(['lib/new/x.ts']);
  });
});
