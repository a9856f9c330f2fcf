/**
 * lib/'s READMEs cannot rot silently: every top-level folder of lib/ has one, and every `.ts` file
 * a README names in backticks exists (a renamed or removed file fails here, not in a newcomer's
 * search).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '..');
const LIB = path.join(REPO, 'lib');

/** The `.ts` file names a README's text puts in backticks (fenced code blocks left out). */
function namedTypeScriptFiles(markdown: string): string[] {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, '');
  return [...prose.matchAll(/`([\w./-]+\.ts)`/g)].map((match) => match[1] as string);
}

/** Every README.md under `dir`, at any depth. */
function readmesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => path.basename(file) === 'README.md')
    .map((file) => path.join(dir, file));
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

/**
 * Whether a name a README gives resolves: a path (`core/timers.ts`, `lib/runtime/catalog.ts`) from
 * the README's folder, its top-level lib/ folder, lib/ or the repository; a bare file name to a
 * file of that name in its top-level lib/ folder or below (lib/runtime/recovery's README names
 * lib/runtime's `deps.ts`).
 */
function resolves(readme: string, name: string): boolean {
  const dir = path.dirname(readme);
  const topLevel = path.join(LIB, path.relative(LIB, dir).split(path.sep)[0] as string);
  if (!name.includes('/')) return filesUnder(topLevel).some((file) => path.basename(file) === name);
  return [dir, topLevel, LIB, REPO].some((base) => fs.existsSync(path.join(base, name)));
}

describe('the READMEs of lib/', () => {
  const folders = fs
    .readdirSync(LIB, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  it('are one per top-level folder', () => {
    const missing = folders.filter((folder) => !fs.existsSync(path.join(LIB, folder, 'README.md')));
    expect(missing).toEqual([]);
  });

  it('name only .ts files that exist', () => {
    const readmes = readmesUnder(LIB);
    const named = readmes.flatMap((readme) =>
      namedTypeScriptFiles(fs.readFileSync(readme, 'utf8')).map((name) => ({ readme, name })),
    );
    const unresolved = named
      .filter(({ readme, name }) => !resolves(readme, name))
      .map(({ readme, name }) => `${path.relative(REPO, readme)}: ${name}`);
    expect(unresolved).toEqual([]);
    // A reader that found no names would pass vacuously.
    expect(readmes.length).toBeGreaterThan(20);
    expect(named.length).toBeGreaterThan(150);
  });

  it('reads backticked .ts names in prose and tables, not in fenced blocks or as globs', () => {
    const markdown = [
      '`compile.ts` turns a plan into ASL; `states/graph.ts` holds the graph.',
      '| `a.ts`, `b/c.ts` | files |',
      '```',
      '`fenced.ts`',
      '```',
      'a new state type: a `<kind>-state.ts`, `*.ts`; `plangate run` and `index.tsx`',
    ].join('\n');
    expect(namedTypeScriptFiles(markdown)).toEqual(['compile.ts', 'states/graph.ts', 'a.ts', 'b/c.ts']);
  });
});
