/**
 * The tools a step may call, as data: name, description, zod input schema and whether
 * a call is destructive (then the step needs `requiresApproval`). The step runner in
 * lib/runtime implements the built-ins against these names and schemas; teams add
 * their own with `createToolRegistry([...])`.
 */
import { z } from 'zod';
import { suggest } from './names.ts';
import type { Step } from './schema.ts';
import { analyzeShell, describeFinding, settingReason } from './shell/index.ts';

export interface ToolDefinition {
  /** The name steps use in `tool:`. */
  readonly name: string;
  readonly description: string;
  /** Validates the step's `args` (after whole-string `${...}` references are set aside). */
  readonly inputSchema: z.ZodType;
  /** Every call changes or deletes something that is hard to undo. */
  readonly destructive: boolean;
  /**
   * For tools that are destructive only with some arguments (`rm -rf`, HTTP DELETE).
   * Receives the step's args as written (references unresolved).
   * @default no call is destructive beyond `destructive`
   */
  readonly isDestructiveCall?: (args: Record<string, unknown>) => boolean;
  /**
   * Why a call is destructive, one phrase per reason (empty: it is not); the gate shows them.
   * @default `destructive <tool> call` when `destructive` or `isDestructiveCall` says so
   */
  readonly destructiveReasons?: (args: Record<string, unknown>) => readonly string[];
  /**
   * Why a call that is not destructive is not proven read-only either (its effect is unknown), one
   * phrase per reason; empty: the call only reads. Asked only when the call is not destructive.
   * @default a call of a tool without it is unknown: `what a <tool> call does is not known`
   */
  readonly unknownReasons?: (args: Record<string, unknown>) => readonly string[];
  /** What a call sends away or reads of credentials (an upload, a pipe into `curl`, `~/.ssh`). @default none */
  readonly exfiltrationReasons?: (args: Record<string, unknown>) => readonly string[];
}

const seconds = z.number().int().positive().max(86_400);

export const ShellArgsSchema = z.strictObject({
  command: z.string().min(1),
  cwd: z.string().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  timeoutSeconds: seconds.optional(),
});
export type ShellArgs = z.infer<typeof ShellArgsSchema>;

export const HttpArgsSchema = z.strictObject({
  method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
  url: z.string().min(1),
  headers: z.record(z.string(), z.string()).optional(),
  /** A string is sent as is; anything else as JSON. */
  body: z.unknown().optional(),
  timeoutSeconds: seconds.optional(),
});
export type HttpArgs = z.infer<typeof HttpArgsSchema>;

export const LambdaArgsSchema = z.strictObject({
  functionName: z.string().min(1),
  payload: z.unknown().optional(),
});
export type LambdaArgs = z.infer<typeof LambdaArgsSchema>;

export const AgentArgsSchema = z.strictObject({
  /** The task text (seed 004's `**task:**`). */
  task: z.string().min(1),
  /** The agent role (seed 004's `**target:**`). */
  agent: z.string().min(1).optional(),
});
export type AgentArgs = z.infer<typeof AgentArgsSchema>;

export const WaitArgsSchema = z.strictObject({
  seconds: z.number().int().min(0).max(31_536_000),
});
export type WaitArgs = z.infer<typeof WaitArgsSchema>;

export const EchoArgsSchema = z.strictObject({
  message: z.string().optional(),
  value: z.unknown().optional(),
});
export type EchoArgs = z.infer<typeof EchoArgsSchema>;

/** What in a shell command deletes or changes something hard to undo (lib/plan/shell). */
function shellReasons(args: Record<string, unknown>): string[] {
  return typeof args.command === 'string' ? analyzeShell(args.command).destructive.map(describeFinding) : [];
}

/** What in a shell call is not proven read-only: its command's parts, and a step `env` that changes what runs. */
function shellUnknown(args: Record<string, unknown>): string[] {
  const env = args.env !== null && typeof args.env === 'object' ? Object.keys(args.env) : [];
  return [
    ...env.flatMap((name) => {
      const reason = settingReason(name);
      return reason ? [`the step's env ${reason}`] : [];
    }),
    ...(typeof args.command === 'string' ? analyzeShell(args.command).unknown.map(describeFinding) : []),
  ];
}

function shellExfiltration(args: Record<string, unknown>): string[] {
  return typeof args.command === 'string' ? analyzeShell(args.command).exfiltration.map(describeFinding) : [];
}

/** HTTP methods that only read (RFC 9110's safe methods). */
const SAFE_METHODS: ReadonlySet<unknown> = new Set(['GET', 'HEAD', 'OPTIONS']);

export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  {
    name: 'shell',
    description: 'Run a shell command (bash -c) in the work directory; fails on a non-zero exit code.',
    inputSchema: ShellArgsSchema,
    destructive: false,
    isDestructiveCall: (args) => shellReasons(args).length > 0,
    destructiveReasons: shellReasons,
    unknownReasons: shellUnknown,
    exfiltrationReasons: shellExfiltration,
  },
  {
    name: 'http',
    description: 'Send an HTTP request; fails on a network error or a 5xx status.',
    inputSchema: HttpArgsSchema,
    destructive: false,
    isDestructiveCall: (args) => args.method === 'DELETE',
    destructiveReasons: (args) => (args.method === 'DELETE' ? [`HTTP DELETE ${String(args.url)}`] : []),
    unknownReasons: (args) =>
      SAFE_METHODS.has(args.method)
        ? []
        : [`HTTP ${String(args.method)} ${String(args.url)} may change what it reaches`],
  },
  {
    name: 'lambda',
    description: 'Invoke an AWS Lambda function synchronously with a JSON payload.',
    inputSchema: LambdaArgsSchema,
    destructive: false,
    unknownReasons: (args) => [
      `invokes the Lambda function ${String(args.functionName)}, whose effect is not known`,
    ],
  },
  {
    name: 'agent',
    description: 'Dispatch a task to an agent role (seed 004); steps with `target` use it implicitly.',
    inputSchema: AgentArgsSchema,
    destructive: false,
    unknownReasons: (args) => [
      `agent ${typeof args.agent === 'string' ? args.agent : '(default)'} decides at run time what it runs and changes, and nothing it runs in makes it read-only`,
    ],
  },
  {
    name: 'wait',
    description: 'Wait a number of seconds (a Step Functions Wait state).',
    inputSchema: WaitArgsSchema,
    destructive: false,
    unknownReasons: () => [],
  },
  {
    name: 'echo',
    description: 'Return its message and value as the step output; does nothing else.',
    inputSchema: EchoArgsSchema,
    destructive: false,
    unknownReasons: () => [],
  },
];

/** Tools by name. Immutable once built; build another to add tools. */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  constructor(tools: readonly ToolDefinition[]) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
      if (!/^[A-Za-z][A-Za-z0-9_.:-]*$/.test(tool.name))
        throw new Error(`tool name "${tool.name}" is not valid`);
      this.tools.set(tool.name, tool);
    }
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** ` (did you mean "shell"?)` for a near-miss name, else ''. */
  suggest(name: string): string {
    return suggest(name, this.names());
  }
}

/** The built-in tools plus a team's own; a name may be registered only once. */
export function createToolRegistry(extra: readonly ToolDefinition[] = []): ToolRegistry {
  return new ToolRegistry([...BUILTIN_TOOLS, ...extra]);
}

/** The tool seed 004's agent steps (`target`/`task`) map onto. */
export const AGENT_TOOL = 'agent';

/**
 * The call a step makes: its tool and args, with seed 004's `target`/`task` mapped onto
 * the `agent` tool. Undefined for a pure human step (`requiresHuman` and no tool).
 */
export function stepInvocation(
  step: Pick<Step, 'tool' | 'args' | 'target' | 'task'>,
): { tool: string; args: Record<string, unknown> } | undefined {
  const tool = step.tool ?? (step.target !== undefined ? AGENT_TOOL : undefined);
  if (tool === undefined) return undefined;
  if (tool !== AGENT_TOOL) return { tool, args: step.args };
  const args: Record<string, unknown> = { ...step.args };
  if (args.task === undefined && step.task !== undefined) args.task = step.task;
  if (args.agent === undefined && step.target !== undefined) args.agent = step.target;
  return { tool, args };
}

/** Why a call of `tool` with `args` is destructive, per the tool's definition; empty when it is not. */
export function destructiveCallReasons(
  tool: ToolDefinition,
  args: Record<string, unknown>,
): readonly string[] {
  if (tool.destructiveReasons) {
    const reasons = tool.destructiveReasons(args);
    return tool.destructive && reasons.length === 0 ? [`every ${tool.name} call is destructive`] : reasons;
  }
  return tool.destructive || tool.isDestructiveCall?.(args) ? [`destructive ${tool.name} call`] : [];
}

/** What a call does, proven: read-only, destructive (a known destructive form) or unknown (anything else). */
export type CallEffect = 'read-only' | 'destructive' | 'unknown';

export interface CallClassification {
  readonly effect: CallEffect;
  /** Why it is destructive; empty unless `effect` is destructive. */
  readonly destructive: readonly string[];
  /** Why its effect is unknown; empty unless `effect` is unknown. */
  readonly unknown: readonly string[];
  /** What it sends away or reads of credentials, whatever its effect. */
  readonly exfiltration: readonly string[];
}

/** A call of `tool` with `args` sorted into its class, with the reasons. */
export function classifyCall(tool: ToolDefinition, args: Record<string, unknown>): CallClassification {
  const destructive = destructiveCallReasons(tool, args);
  const exfiltration = tool.exfiltrationReasons?.(args) ?? [];
  if (destructive.length > 0) return { effect: 'destructive', destructive, unknown: [], exfiltration };
  const unknown = tool.unknownReasons
    ? tool.unknownReasons(args)
    : [`what a ${tool.name} call does is not known (the tool does not say which calls only read)`];
  return { effect: unknown.length > 0 ? 'unknown' : 'read-only', destructive, unknown, exfiltration };
}
