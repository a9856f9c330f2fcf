/**
 * Two engines in one process share nothing: what an engine caches belongs to it (or to its store
 * or resource invoker), never to a module. Checked two ways: the source of lib/engine declares no
 * mutable state at its top level, and two engines running at once with different settings each
 * see only their own.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/index.ts';

const ENGINE_DIR = path.resolve(import.meta.dirname, '../../lib/engine');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

/**
 * Each top-level declaration of a module (biome formats them from the first column), with the
 * lines it spans, and each class member that is `static` without `readonly`.
 */
function mutableModuleState(source: string): string[] {
  const lines = source.split('\n');
  const found: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const member =
      /^\s+(?:(?:private|protected|public)\s+)?static\s+(?!readonly\b)(?!(?:async\s+)?\w+\s*[(<])(\w+)/.exec(
        line,
      );
    if (member) found.push(`line ${i + 1}: static field ${member[1]} is not readonly`);
    const declaration = /^(?:export\s+)?(let|var|const)\s+(\w+)(.*)$/.exec(line);
    if (!declaration) continue;
    const [, keyword, name] = declaration;
    if (keyword !== 'const') {
      found.push(`line ${i + 1}: top-level ${keyword} ${name}`);
      continue;
    }
    // the whole declaration: up to the next line that starts in the first column
    let text = declaration[3] as string;
    for (let j = i + 1; j < lines.length && /^(\s|[)\]}])/.test(lines[j] as string); j++) text += lines[j];
    const typed = /^\s*:\s*(.*?)=/.exec(text)?.[1] ?? '';
    const value = text.slice(text.indexOf('=') + 1).trim();
    if (/^new\s+(Weak)?(Map|Set)\b/.test(value) && !/^Readonly(Map|Set)</.test(typed.trim()))
      found.push(`line ${i + 1}: ${name} is a module-level ${/^new\s+(\w+)/.exec(value)?.[1]}`);
    else if (/^(new\s+Array\b|Buffer\.alloc|\[\s*\]|new\s+ByteWriter\b)/.test(value))
      found.push(`line ${i + 1}: ${name} is a module-level mutable buffer or array`);
  }
  return found;
}

describe('no module-level mutable state in lib/engine', () => {
  it('declares no top-level let or var, no Map or Set not typed Readonly, no shared buffer, no mutable static field', () => {
    const problems = sourceFiles(ENGINE_DIR).flatMap((file) =>
      mutableModuleState(fs.readFileSync(file, 'utf8')).map(
        (problem) => `${path.relative(ENGINE_DIR, file)} ${problem}`,
      ),
    );
    expect(problems).toEqual([]);
  });

  it('the check finds what it looks for', () => {
    expect(
      mutableModuleState(
        [
          'let count = 0;',
          'export const cache = new Map<string, number>();',
          'const seen: Set<string> = new Set();',
          'const marks = new WeakSet<object>();',
          'const pool = Buffer.allocUnsafe(16);',
          'class C {',
          '  private static counter = 0;',
          '  static readonly LIMIT = 1;',
          '  static of(): C {',
          '    return new C();',
          '  }',
          '}',
          'const KINDS: ReadonlySet<string> = new Set([',
          "  'a',",
          ']);',
          'const NAMES = Object.freeze([1]);',
        ].join('\n'),
      ),
    ).toEqual([
      'line 1: top-level let count',
      'line 2: cache is a module-level Map',
      'line 3: seen is a module-level Set',
      'line 4: marks is a module-level WeakSet',
      'line 5: pool is a module-level mutable buffer or array',
      'line 7: static field counter is not readonly',
    ]);
  });
});

describe('two engines in one process', () => {
  const dirs: string[] = [];
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('run at once with different settings, and neither sees what the other cached', async () => {
    // The same definition text and the same task state names on both engines: every cache keyed
    // by them (parsed definitions and paths, compiled JSONata, task plans, quoted names, payload
    // texts) would hand one engine's entry to the other if they were shared.
    const definition = JSON.stringify({
      StartAt: 'Shape',
      States: {
        Shape: {
          Type: 'Pass',
          Parameters: { 'who.$': '$.who', 'region.$': '$$.Execution.Id' },
          Next: 'Call',
        },
        Call: {
          Type: 'Task',
          Resource: 'arn:aws:states:::lambda:invoke',
          Parameters: { FunctionName: 'whoami', 'Payload.$': '$' },
          ResultSelector: { 'answer.$': '$.Payload' },
          Next: 'Say',
        },
        Say: {
          Type: 'Pass',
          QueryLanguage: 'JSONata',
          Output: '{% $states.input.answer & " via " & $split($states.context.Execution.Id, ":")[3] %}',
          End: true,
        },
      },
    });
    // what each engine's function was told of its sandbox: one log stream per function and engine
    const streams = { east: new Set<string>(), west: new Set<string>() };
    const run = async (name: 'east' | 'west', region: string, durable: boolean) => {
      const dir = durable ? fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-two-engines-')) : undefined;
      if (dir) dirs.push(dir);
      const engine = createEngine({
        storeDir: dir,
        region,
        timeScale: 0,
        invokeResource: createResourceInvoker({
          region,
          // each engine's function answers with its own name, a moment later (so the engines interleave)
          lambdaHandlers: {
            whoami: async (event, context) => {
              streams[name].add(context.logStreamName);
              await new Promise((resolve) => setImmediate(resolve));
              return `${(event as { who: string }).who}@${name}`;
            },
          },
        }),
      });
      engines.push(engine);
      const { stateMachineArn } = await engine.createStateMachine({
        name: 'Same',
        definition,
        roleArn: 'arn:aws:iam::123456789012:role/r',
      });
      const started = await Promise.all(
        [1, 2, 3].map((n) =>
          engine.startExecution({
            stateMachineArn,
            name: `run-${n}`,
            input: JSON.stringify({ who: `caller-${n}` }),
          }),
        ),
      );
      const outputs = [];
      for (const { executionArn } of started) {
        const done = await engine.awaitExecution(String(executionArn));
        expect(done.status).toBe('SUCCEEDED');
        outputs.push(JSON.parse(String(done.output)));
        const { events = [] } = await engine.getExecutionHistory({ executionArn });
        const scheduled = events.find((e) => e.type === 'TaskScheduled');
        expect(JSON.parse(String(scheduled?.taskScheduledEventDetails?.parameters)).Payload.region).toContain(
          `:${region}:`,
        );
      }
      return outputs;
    };
    const [east, west] = await Promise.all([run('east', 'us-east-1', true), run('west', 'eu-west-1', false)]);
    expect(east).toEqual([1, 2, 3].map((n) => `caller-${n}@east via us-east-1`));
    expect(west).toEqual([1, 2, 3].map((n) => `caller-${n}@west via eu-west-1`));
    // a function keeps its stream within its engine, and the other engine's same-named function has its own
    expect(streams.east.size).toBe(1);
    expect(streams.west.size).toBe(1);
    expect([...streams.east]).not.toEqual([...streams.west]);
  });
});
