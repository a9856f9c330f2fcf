/** The engine's folders import what lib/engine/README.md says they import. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importSpecifiers } from '../../scripts/architecture.ts';

const ENGINE_DIR = path.resolve(import.meta.dirname, '../../lib/engine');

/** Engine files (relative to lib/engine) each file under `folder` imports. */
function engineImports(folder: string): string[] {
  const dir = path.join(ENGINE_DIR, folder);
  const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  return files.flatMap((file) => {
    const from = path.join(dir, file);
    return importSpecifiers(fs.readFileSync(from, 'utf8'))
      .map((specifier) => path.relative(ENGINE_DIR, path.resolve(path.dirname(from), specifier)))
      .filter((target) => !target.startsWith('..'));
  });
}

/** The imports of `folder` that leave it and are not among `allowed` (files or folders of lib/engine). */
function outside(folder: string, allowed: readonly string[]): string[] {
  return [...new Set(engineImports(folder))].filter(
    (target) =>
      !target.startsWith(`${folder}/`) &&
      !allowed.some((a) => target === a || target.startsWith(`${a.replace(/\/$/, '')}/`)),
  );
}

describe('lib/engine layout', () => {
  it('persistence imports nothing of the engine', () => {
    expect(outside('persistence', [])).toEqual([]);
  });

  it('dataflow and validate import types.ts only; api the operation list and types.ts', () => {
    expect(outside('dataflow', ['types.ts'])).toEqual([]);
    expect(outside('validate', ['types.ts'])).toEqual([]);
    expect(outside('api', ['operations.ts', 'types.ts'])).toEqual([]);
  });

  it('core imports dataflow, persistence and types.ts; resources two helpers of core and types.ts', () => {
    expect(outside('core', ['dataflow', 'persistence', 'types.ts'])).toEqual([]);
    expect(outside('resources', ['core/random.ts', 'core/timers.ts', 'types.ts'])).toEqual([]);
  });
});
