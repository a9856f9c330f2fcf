/**
 * The planner's prompt: the tools a step may call (name, description, args JSON Schema generated
 * from lib/plan/tools.ts's zod schemas), seed 000's plan rules, the goal, the context, and a
 * bounded snapshot of the workspace (file names and sizes, never contents).
 */
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { PlanSchema } from '../plan/schema.ts';
import type { ToolDefinition } from '../plan/tools.ts';

/** The plan's JSON Schema as the model is asked to answer in it (the input shape, defaults optional). */
export function planJsonSchema(): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(PlanSchema, {
    io: 'input',
    unrepresentable: 'any',
  });
  return schema;
}

const RULES = `Rules for the plan (it is checked by a validator; a plan that breaks a rule comes back to you with the validator's located problems):
- Each step is concrete and testable: a clear description, one tool from the list, args that fit that tool's schema.
- Dependencies are explicit (dependsOn lists earlier step ids); no cycles.
- Between 3 and 7 steps unless the goal truly needs more (then set sizePolicy).
- Every step has a contract that the harness runs to prove it done: a shell command that exits 0, an HTTP check, or a JSONata assertion over the step's output. A step never proves itself, and a contract only checks: it never changes or deletes anything.
- A step that deletes or changes something hard to undo sets requiresApproval: true.
- Secrets are referenced as \${secrets.name} and declared in secrets; never write a secret's value.
- Recovery recipes per failure class (transient, permission, invalid_input, logic, unrecoverable) may be declared under recovery.
- Answer with the plan only, as one JSON document.`;

/** The workspace as the planner shows it to the model: file names and sizes, never contents. */
export interface WorkspaceListing {
  readonly root: string;
  readonly files: readonly { readonly path: string; readonly bytes: number }[];
  readonly truncated: boolean;
}

const SKIPPED_DIRS = new Set([
  '.git',
  'node_modules',
  '.plangate',
  'dist',
  'cdk.out',
  '.venv',
  '__pycache__',
]);
/** Files that hold secrets by convention: not even their names are shown. */
const SECRET_FILES =
  /^(\.env(\..*)?|.*\.(pem|key|p12|pfx)|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|credentials|\.netrc|\.npmrc|\.pypirc)$/i;

/** File names and sizes under `root`, breadth first, at most `limit` of them. */
export async function workspaceListing(root: string, limit = 200): Promise<WorkspaceListing> {
  const files: { path: string; bytes: number }[] = [];
  const queue = [root];
  let truncated = false;
  while (queue.length > 0) {
    const dir = queue.shift() as string;
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) queue.push(full);
      } else if (entry.isFile() && !SECRET_FILES.test(entry.name)) {
        if (files.length >= limit) {
          truncated = true;
          break;
        }
        files.push({ path: relative(root, full), bytes: (await stat(full)).size });
      }
    }
    if (truncated) break;
  }
  return { root, files, truncated };
}

export interface PromptInput {
  readonly goal: string;
  readonly context?: string;
  readonly workspace?: WorkspaceListing;
  readonly tools: readonly ToolDefinition[];
}

/** Each tool a step may call: its name, whether it is destructive, what it does and its args' JSON Schema. */
export function toolCatalogue(tools: readonly ToolDefinition[]): string[] {
  return tools.map((tool) => {
    const { $schema: _dialect, ...args } = z.toJSONSchema(tool.inputSchema, {
      io: 'input',
      unrepresentable: 'any',
    });
    return `- ${tool.name}${tool.destructive ? ' (destructive: needs requiresApproval)' : ''}: ${tool.description}\n  args: ${JSON.stringify(args)}`;
  });
}

export function systemPrompt(tools: readonly ToolDefinition[]): string {
  return [
    'You are the planner of plangate, a plan-execution harness. You turn a goal into a plan that a person approves and the harness runs step by step, proving each step with its contract.',
    '',
    'Tools a step may call:',
    ...toolCatalogue(tools),
    '',
    RULES,
  ].join('\n');
}

export function goalMessage(input: PromptInput): string {
  const parts = [`Goal: ${input.goal}`];
  if (input.context) parts.push('', 'Context:', input.context);
  if (input.workspace) {
    parts.push(
      '',
      `Workspace (${input.workspace.root}; names and sizes only${input.workspace.truncated ? ', first files only' : ''}):`,
    );
    for (const file of input.workspace.files) parts.push(`- ${file.path} (${file.bytes} bytes)`);
  }
  parts.push('', 'Write the plan.');
  return parts.join('\n');
}
