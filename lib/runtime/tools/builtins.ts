/**
 * The built-in tools: lib/plan/tools.ts's names and zod schemas paired with their executors,
 * so the runner validates args with exactly the schemas the validator used.
 */
import { BUILTIN_TOOLS } from '../../plan/tools.ts';
import { runAgent } from './agent.ts';
import { runEcho } from './echo.ts';
import { runHttp } from './http.ts';
import { runLambda } from './lambda.ts';
import { type Tool, ToolExecutorRegistry } from './registry.ts';
import { runShell } from './shell.ts';
import type { ToolExecutor } from './types.ts';
import { runWait } from './wait.ts';

const EXECUTORS: Readonly<Record<string, ToolExecutor<never>>> = {
  shell: runShell,
  http: runHttp,
  lambda: runLambda,
  agent: runAgent,
  wait: runWait,
  echo: runEcho,
};

/** Every built-in tool as an executable Tool. */
export function builtinTools(): Tool[] {
  return BUILTIN_TOOLS.map((definition) => {
    const run = EXECUTORS[definition.name];
    if (!run) throw new Error(`built-in tool "${definition.name}" has no executor`);
    return { name: definition.name, schema: definition.inputSchema, run: run as ToolExecutor<unknown> };
  });
}

/** A registry holding the built-in tools; teams add theirs with `register` or `registerBindings`. */
export function builtinRegistry(): ToolExecutorRegistry {
  const registry = new ToolExecutorRegistry();
  for (const tool of builtinTools()) registry.register(tool);
  return registry;
}
