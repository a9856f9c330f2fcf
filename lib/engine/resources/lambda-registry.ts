import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LambdaHandler } from '../types.ts';
import { LambdaFunctionError } from './lambda-errors.ts';

/** A function found in the registry: its handler and the names AWS would report. */
export interface ResolvedFunction {
  readonly functionName: string;
  readonly functionArn: string;
  readonly qualifier?: string;
  readonly handler: LambdaHandler;
}

export interface LambdaHandlerRegistryProps {
  /** Region of the ARNs this registry reports. @default 'us-east-1' */
  readonly region?: string;
  /** Account of the ARNs this registry reports. @default '123456789012' */
  readonly accountId?: string;
}

/** `name`, `name:qualifier`, `account:function:name[:qualifier]` or a full function ARN → name and qualifier. */
export function parseFunctionName(reference: string): { name: string; qualifier?: string } {
  const parts = reference.split(':');
  if (parts[0] === 'arn') {
    const [name, qualifier] = [parts[6] ?? '', parts[7]];
    return qualifier === undefined ? { name } : { name, qualifier };
  }
  if (parts[1] === 'function') {
    const [name, qualifier] = [parts[2] ?? '', parts[3]];
    return qualifier === undefined ? { name } : { name, qualifier };
  }
  const [name = '', qualifier] = parts;
  return qualifier === undefined ? { name } : { name, qualifier };
}

/** Bound on remembered references, should callers invent them without end. */
const MAX_REGISTERED_REFERENCES = 1024;

/**
 * In-process Lambda functions, registered by function name or ARN: either a handler, or a module
 * spec (`path/to/module.ts#export`) loaded on first invocation (as Lambda loads the handler module).
 */
export class LambdaHandlerRegistry {
  private readonly handlers = new Map<string, LambdaHandler>();
  private readonly modules = new Map<string, { path: string; exportName: string }>();
  private readonly loading = new Map<string, Promise<LambdaHandler>>();
  /** {@link resolveRegistered} answers by reference (references come from definitions: few). */
  private readonly registered = new Map<string, ResolvedFunction>();
  readonly region: string;
  readonly accountId: string;

  constructor(props: LambdaHandlerRegistryProps = {}) {
    this.region = props.region ?? 'us-east-1';
    this.accountId = props.accountId ?? '123456789012';
  }

  /** Registers `handler` under a function name or ARN. */
  register(nameOrArn: string, handler: LambdaHandler): this {
    this.handlers.set(this.key(nameOrArn), handler);
    this.registered.clear();
    return this;
  }

  /**
   * The function a reference names when its handler was registered directly (no module to
   * load), at once; the same reference gets the same object every time. Undefined otherwise.
   */
  resolveRegistered(reference: string): ResolvedFunction | undefined {
    let fn = this.registered.get(reference);
    if (fn) return fn;
    const { name, qualifier } = parseFunctionName(reference);
    const handler = this.handlers.get(name);
    if (!handler) return undefined;
    fn = {
      functionName: name,
      functionArn: this.functionArn(name),
      handler,
      ...(qualifier ? { qualifier } : {}),
    };
    if (this.registered.size >= MAX_REGISTERED_REFERENCES) this.registered.clear();
    this.registered.set(reference, fn);
    return fn;
  }

  /** Registers a handler module (`path#export`, export defaults to `handler`) loaded on first use. */
  registerModule(nameOrArn: string, spec: string): this {
    const hash = spec.lastIndexOf('#');
    const path = hash < 0 ? spec : spec.slice(0, hash);
    const exportName = hash < 0 ? 'handler' : spec.slice(hash + 1) || 'handler';
    this.modules.set(this.key(nameOrArn), { path: resolve(path), exportName });
    return this;
  }

  /** The ARN AWS reports for a function of this registry. */
  functionArn(name: string): string {
    return `arn:aws:lambda:${this.region}:${this.accountId}:function:${name}`;
  }

  /** Finds the function a `FunctionName` / resource ARN refers to, or undefined when none is registered. */
  async resolve(reference: string): Promise<ResolvedFunction | undefined> {
    const { name, qualifier } = parseFunctionName(reference);
    const key = this.key(reference);
    const handler = await this.handlerFor(key, name);
    if (!handler) return undefined;
    return {
      functionName: name,
      functionArn: this.functionArn(name),
      handler,
      ...(qualifier ? { qualifier } : {}),
    };
  }

  /** Registry keys are function names: an ARN registers (and is found) by its name. */
  private key(nameOrArn: string): string {
    return parseFunctionName(nameOrArn).name;
  }

  private async handlerFor(key: string, name: string): Promise<LambdaHandler | undefined> {
    const direct = this.handlers.get(key) ?? this.handlers.get(name);
    if (direct) return direct;
    const module = this.modules.get(key) ?? this.modules.get(name);
    if (!module) return undefined;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = loadHandler(module.path, module.exportName);
      this.loading.set(key, pending);
      // A failed load is retried on the next invocation, as a new Lambda sandbox would.
      pending.catch(() => this.loading.delete(key));
    }
    return pending;
  }
}

async function loadHandler(path: string, exportName: string): Promise<LambdaHandler> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw new LambdaFunctionError({
      errorType: 'Runtime.ImportModuleError',
      errorMessage: `Error: Cannot load module '${path}': ${error instanceof Error ? error.message : String(error)}`,
      trace: [],
    });
  }
  const handler = module[exportName];
  if (typeof handler !== 'function') {
    throw new LambdaFunctionError({
      errorType: 'Runtime.HandlerNotFound',
      errorMessage: `${path}#${exportName} is undefined or not exported`,
      trace: [],
    });
  }
  return handler as LambdaHandler;
}
