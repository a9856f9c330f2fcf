/**
 * The executable tool registry (lib/plan/tools.ts holds the definitions): built-in tools plus the ones teams register by name — a Lambda function
 * (on AWS), or locally a module path or a command. The step runner looks tools up here and
 * validates args against the tool's schema before anything runs.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { InvalidInputError, NotConfiguredError, TimeoutError, ToolFailedError } from '../shared/errors.ts';
import { runProcess } from '../shared/process.ts';
import { invokeLambda } from './lambda.ts';
import type { ToolContext, ToolExecutor, ToolOutput } from './types.ts';

/** A tool: its name, the schema its args must satisfy, and its executor. */
export interface Tool<I = unknown> {
  readonly name: string;
  readonly schema: z.ZodType<I>;
  readonly run: ToolExecutor<I>;
}

/** How a team declares its own tool (e.g. in a plangate config file). */
export const ToolBindingSchema = z.union([
  z.strictObject({ lambda: z.string().min(1) }),
  z.strictObject({ module: z.string().min(1) }),
  z.strictObject({ command: z.string().min(1) }),
]);
export type ToolBinding = z.infer<typeof ToolBindingSchema>;
export const ToolBindingsSchema = z.record(z.string().regex(/^[a-z][a-z0-9_.-]*$/i), ToolBindingSchema);

/** Args of a team tool are any JSON object; the tool validates them itself. */
const AnyArgsSchema = z.record(z.string(), z.unknown());

export class ToolExecutorRegistry {
  private readonly tools = new Map<string, Tool>();

  /** Registers a tool; registering a name twice is a mistake, not an override. */
  register<I>(tool: Tool<I>): this {
    if (this.tools.has(tool.name)) throw new InvalidInputError(`tool "${tool.name}" is already registered`);
    this.tools.set(tool.name, tool as Tool);
    return this;
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  names(): string[] {
    return [...this.tools.keys()].sort();
  }

  get(name: string, location = 'tool'): Tool {
    const tool = this.tools.get(name);
    if (!tool) {
      throw new InvalidInputError(`unknown tool "${name}"; registered tools: ${this.names().join(', ')}`, {
        location,
      });
    }
    return tool;
  }

  /** Validates `args` against the tool's schema (a located InvalidInput error when they do not fit), then runs it. */
  async call(name: string, args: unknown, ctx: ToolContext): Promise<ToolOutput> {
    const tool = this.get(name, `steps.${ctx.stepId}.tool`);
    const parsed = tool.schema.safeParse(args);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.length ? `.${issue.path.join('.')}` : '';
      throw new InvalidInputError(`args do not fit tool "${name}": ${issue?.message ?? 'invalid'}`, {
        location: `steps.${ctx.stepId}.args${path}`,
      });
    }
    return tool.run(parsed.data, ctx);
  }

  /** Registers team tools from their bindings (zod-checked here, at the edge). */
  async registerBindings(bindings: unknown, baseDir = process.cwd()): Promise<this> {
    const parsed = ToolBindingsSchema.safeParse(bindings);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InvalidInputError(issue?.message ?? 'invalid tool bindings', {
        location: `tools.${issue?.path.join('.') ?? ''}`,
      });
    }
    for (const [name, binding] of Object.entries(parsed.data)) {
      this.register(await bindTool(name, binding, baseDir));
    }
    return this;
  }
}

/** Builds a tool from a binding: a Lambda function, a module exporting `run` (and optionally `schema`), or a command. */
export async function bindTool(name: string, binding: ToolBinding, baseDir: string): Promise<Tool> {
  if ('lambda' in binding) return lambdaTool(name, binding.lambda);
  if ('command' in binding) return commandTool(name, binding.command);
  const path = isAbsolute(binding.module) ? binding.module : resolve(baseDir, binding.module);
  const mod = (await import(pathToFileURL(path).href)) as { run?: unknown; schema?: unknown };
  if (typeof mod.run !== 'function') {
    throw new InvalidInputError(`module ${binding.module} does not export a run(args, ctx) function`, {
      location: `tools.${name}.module`,
    });
  }
  const schema = mod.schema instanceof z.ZodType ? mod.schema : AnyArgsSchema;
  return { name, schema, run: mod.run as ToolExecutor<unknown> };
}

/** A team tool backed by a Lambda function: the args are its event, its JSON result the output. */
export function lambdaTool(name: string, functionName: string): Tool {
  return {
    name,
    schema: AnyArgsSchema,
    run: async (args, ctx) => {
      if (!ctx.lambda)
        throw new NotConfiguredError(
          `tool "${name}" is a Lambda function but no Lambda client is configured`,
        );
      const out = await invokeLambda(ctx.lambda, { functionName, payload: args }, ctx.signal);
      if (out.functionError) {
        const err = (out.result ?? {}) as { errorType?: string; errorMessage?: string };
        const failure = new ToolFailedError(
          `tool "${name}" failed: ${err.errorMessage ?? out.functionError}`,
        );
        if (err.errorType) failure.name = err.errorType;
        throw failure;
      }
      return out.result !== null && typeof out.result === 'object'
        ? (out.result as ToolOutput)
        : { result: out.result };
    },
  };
}

/**
 * A team tool backed by a local command: args arrive as JSON on stdin; a JSON object on stdout is the
 * output (anything else is returned as `stdout`); a non-zero exit fails the step.
 */
export function commandTool(name: string, command: string): Tool {
  return {
    name,
    schema: AnyArgsSchema,
    run: async (args, ctx) => {
      const result = await runProcess({
        command,
        cwd: ctx.cwd,
        stdin: JSON.stringify(args),
        timeoutMs: ctx.timeoutMs,
        signal: ctx.signal,
      });
      if (result.timedOut) throw new TimeoutError(`tool "${name}" timed out after ${ctx.timeoutMs} ms`);
      if (result.exitCode !== 0) {
        throw new ToolFailedError(`tool "${name}" exited ${result.exitCode ?? `on ${result.signal}`}`, {
          exitCode: result.exitCode ?? 128,
          output: { stdout: result.stdout, stderr: result.stderr },
        });
      }
      try {
        const parsed: unknown = JSON.parse(result.stdout);
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
          return parsed as ToolOutput;
      } catch {
        // Not JSON: return the text.
      }
      return { stdout: result.stdout, stderr: result.stderr };
    },
  };
}
