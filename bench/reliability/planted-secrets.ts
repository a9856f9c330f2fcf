/**
 * A secret planted where a careless harness would leak it: in step args (through
 * `${secrets.*}`), in tool output, in a contract's stderr, in an agent's output, in a tool's error
 * message. The plan runs with `plangate run` as a user runs it; then every place a person or an
 * auditor can read is searched for the secret's value: the CLI's output, every journal event and
 * every item of every table, the engine's execution histories (through its API and as files), and
 * every other file the run left in its store and work directory.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { TABLES } from '../../lib/runtime/journal/tables.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { openStoreReader } from '../../lib/serve/store-reader.ts';
import { PLANGATE_NODE_ARGS } from '../../tests/support/plangate-cli.ts';

export interface SecretsResult {
  /** Where the secret was planted. */
  readonly planted: string[];
  /** Places searched, with how many bytes / items each. */
  readonly searched: Record<string, number>;
  /** Every place the secret (or its base64) was found: must be empty. */
  readonly found: string[];
  readonly runExitCode: number | null;
  readonly notMeasured: Record<string, string>;
}

const PLAN = `
id: planted-secrets
version: 1
objective: Carry a planted secret through args, output, contract stderr, agent output and errors
sizePolicy: { minSteps: 1 }
secrets:
  - { name: apiToken, source: env, ref: PLANGATE_PLANTED_SECRET }
recovery:
  invalid_input: { detect: { exitCodes: [7] }, maxAttempts: 0, escalation: skip }
steps:
  - id: uses-secret-in-args
    description: Print a line that contains the secret, passed in through the args
    tool: shell
    args: { command: 'echo "calling the API with \${secrets.apiToken}"' }
    contract: { kind: command, command: 'true' }
  - id: contract-stderr
    description: A step whose contract prints the secret on stderr and fails
    dependsOn: [uses-secret-in-args]
    critical: false
    onFail: { retries: 0, escalation: skip }
    tool: shell
    args: { command: 'true' }
    contract: { kind: command, command: 'echo "contract saw \${secrets.apiToken}" >&2; exit 1' }
  - id: tool-error
    description: A tool that fails with the secret in its error message
    dependsOn: [uses-secret-in-args]
    critical: false
    onFail: { retries: 0, escalation: skip }
    tool: shell
    args: { command: 'echo "refused token \${secrets.apiToken}" >&2; exit 7' }
    contract: { kind: command, command: 'true' }
  - id: agent-output
    description: An agent that prints the secret it found in its environment
    dependsOn: [uses-secret-in-args]
    critical: false
    onFail: { retries: 0, escalation: skip }
    tool: agent
    task: Print the token you were given
    args: { task: Print the token you were given }
    contract: { kind: command, command: 'true' }
`;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

export async function plantedSecrets(_repo: string): Promise<SecretsResult> {
  const secret = `plangate-planted-${randomBytes(12).toString('hex')}`;
  const needles = [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('base64url')];
  const dir = await mkdtemp(join(tmpdir(), 'plangate-secrets-'));
  const store = join(dir, 'store');
  const work = join(dir, 'work');
  const found: string[] = [];
  const searched: Record<string, number> = {};
  const look = (where: string, text: string) => {
    searched[where.split(':')[0] as string] = (searched[where.split(':')[0] as string] ?? 0) + text.length;
    for (const needle of needles) if (text.includes(needle)) found.push(where);
  };
  try {
    await rm(work, { recursive: true, force: true });
    await writeFile(join(dir, 'plan.yaml'), PLAN);
    await writeFile(join(dir, 'agent.sh'), `#!/bin/sh\necho "the token is $PLANGATE_PLANTED_SECRET"\n`, {
      mode: 0o755,
    });
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve) => {
      const child = spawn(
        process.execPath,
        [
          ...PLANGATE_NODE_ARGS,
          'run',
          join(dir, 'plan.yaml'),
          '--approve',
          '--store',
          store,
          // retries and escalations wait in scaled time: what is searched does not change
          '--time-scale',
          '0.01',
        ],
        {
          cwd: dir,
          env: {
            ...process.env,
            NODE_NO_WARNINGS: '1',
            PLANGATE_PLANTED_SECRET: secret,
            PLANGATE_AGENT_COMMAND: join(dir, 'agent.sh'),
          },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      let approved = false;
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString();
        // The plan has an agent step, which --approve leaves to a person: approve it as one.
        if (
          !approved &&
          /--approve: (?:a person must approve this|the platform's policy does not permit)/.test(err)
        ) {
          approved = true;
          child.stdin.write('approve\n');
        }
      });
      child.on('exit', (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    });
    if (code === null || code > 1) throw new Error(`plangate run exited ${code}: ${stderr.slice(-2000)}`);
    look('CLI stdout', stdout);
    look('CLI stderr', stderr);

    const paths = storePaths(store);
    const reader = await openStoreReader(paths);
    try {
      for (const table of TABLES) {
        let start: Record<string, unknown> | undefined;
        do {
          const page = await reader.doc.send(
            new ScanCommand({ TableName: `plangate-${table.id}`, ExclusiveStartKey: start }),
          );
          for (const item of page.Items ?? [])
            look(
              `table ${table.id}: ${String(item.executionId ?? item.approvalId ?? item.outputKey ?? '')}`,
              JSON.stringify(item),
            );
          start = page.LastEvaluatedKey;
        } while (start);
      }
    } finally {
      await reader.close();
    }
    // Engine histories and everything else on disk, except dynalite's LevelDB files (compressed;
    // their items were read through the DynamoDB API above).
    for (const file of await filesUnder(dir)) {
      const name = relative(dir, file);
      if (name.includes(`${'dynamodb'}/`) || name === 'agent.sh' || name === 'plan.yaml') continue;
      look(`file ${name}`, (await readFile(file)).toString('latin1'));
    }
    return {
      planted: [
        'step args (${secrets.apiToken})',
        'tool output (stdout)',
        'contract stderr',
        'tool error message (stderr, exit 7)',
        'agent output',
      ],
      searched,
      found,
      runExitCode: code,
      notMeasured: {
        'emails and Slack messages':
          'no local mail sink or Slack server is part of plangate run yet; approval messages are built without step data (lib/runtime/notify/message.ts) and covered by tests/runtime/notify.test.ts',
        'approval pages':
          'measured in the approval-attack section only for refusals; the page shows the plan, never step output',
      },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
