#!/usr/bin/env node
/**
 * The plangate CLI. Each command lives in lib/cli/<command>.ts and exports
 * `run(argv: string[]): Promise<number>` (the exit code) and `usage: string`.
 * Exit codes: 0 ok, 1 the plan is invalid or the run failed, 2 usage.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface CommandModule {
  run(argv: string[]): Promise<number>;
  usage: string;
  /** Commands with subcommands answer `--help` themselves (e.g. `plangate audit query --help`). */
  handlesOwnHelp?: boolean;
}

/** Command name → loader; loaded lazily so `plangate validate` does not pay for the engine or the AWS SDK. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<CommandModule> }> = {
  validate: {
    summary: 'check a plan file; every problem located',
    load: () => import('../lib/cli/validate.ts'),
  },
  plan: {
    summary: 'draft a plan from a goal with an LLM (Bedrock or OpenAI-compatible), checked by the validator',
    load: () => import('../lib/cli/plan.ts'),
  },
  render: {
    summary: 'print a plan as a checklist, Mermaid graph, JSON or YAML',
    load: () => import('../lib/cli/render.ts'),
  },
  compile: {
    summary: 'compile a plan into Step Functions definition(s) and print the compile report',
    load: () => import('../lib/cli/compile.ts'),
  },
  engine: {
    summary: 'serve the embedded Step Functions engine API on 127.0.0.1 (engine serve)',
    load: () => import('../lib/cli/engine.ts'),
  },
  serve: {
    summary: 'serve the Plans and Approvals HTTP API on 127.0.0.1 over the local stack (SigV4/JWT as on AWS)',
    load: () => import('../lib/cli/serve.ts'),
  },
  run: {
    summary: 'validate, gate and run a plan on the local stack with live progress',
    load: () => import('../lib/cli/run.ts'),
  },
  complete: {
    summary: 'report a human step of a running execution done (--value k=v) or failed',
    load: () => import('../lib/cli/complete.ts'),
  },
  resume: {
    summary: 'carry on with an interrupted execution (completed steps are not run again)',
    load: () => import('../lib/cli/resume.ts'),
  },
  worker: {
    summary: "take an agent target's steps from its activity: run the agent, then the step's contract",
    load: () => import('../lib/cli/worker.ts'),
  },
  status: {
    summary: 'list the executions in the local store (plan, status, started, progress)',
    load: () => import('../lib/cli/status.ts'),
  },
  events: {
    summary: "list an execution's stored events and verify their hash chain",
    load: () => import('../lib/cli/events.ts'),
  },
  logs: {
    summary: 'show what the harness Lambdas logged about an execution (by step; --json as written)',
    load: () => import('../lib/cli/logs.ts'),
  },
  files: {
    summary: "regenerate an execution's seed-003 files (state, handoffs, logs, results) from its events",
    load: () => import('../lib/cli/files.ts'),
  },
  audit: {
    summary: 'query, export and verify the event tables (local store or --aws --table NAME)',
    load: () => import('../lib/cli/audit.ts'),
  },
  policy: {
    summary: "validate, test and explain the platform's Cedar policies (who may submit, approve, run, read)",
    load: () => import('../lib/cli/policy.ts'),
  },
};

function overview(): string {
  const lines = ['Usage: plangate <command> [options]', '', 'Commands:'];
  for (const [name, { summary }] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(10)} ${summary}`);
  lines.push('', "Run `plangate <command> --help` for a command's options.");
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<number> {
  // plangate supports Node 20 on purpose; the SDK's notice about its future Node 22 floor is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${overview()}\n`);
    return name === undefined ? 2 : 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    process.stderr.write(`plangate: unknown command "${name}"\n\n${overview()}\n`);
    return 2;
  }
  const command = await entry.load();
  if (!command.handlesOwnHelp && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  return command.run(rest);
}

const invokedDirectly =
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  // A reader that stops early (`plangate events … | head -1`) closes the pipe: that ends the
  // command quietly, as it does for any Unix filter, instead of with an EPIPE stack trace.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(process.exitCode ?? 0);
    });
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`plangate: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
