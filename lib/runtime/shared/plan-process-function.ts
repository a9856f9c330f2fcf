/**
 * The plan-process function, both sides of its one call: the harness's invoker (the step runner
 * and the contract checker hand it every plan process on AWS) and what the function does with a
 * call (lambdas/plan-process.ts). The function's role may write its own logs, nothing else: a
 * process it starts, and whatever that process reads of its parent (/proc/<pid>/environ, the
 * Lambda runtime API), holds none of the harness's authority and cannot assume any role. A call
 * that declares AWS gets a session of the plan AWS role that the harness assumed for the run with
 * the step's session policy and put in the event; any other call gets no credentials at all.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import {
  type PlanAwsCredentials,
  type PlanAwsSession,
  PlanProcessCallSchema,
  type PlanProcessEvent,
  PlanProcessEventSchema,
  type PlanProcessInvoker,
  type PlanProcessResult,
  PlanProcessResultSchema,
} from '../sandbox/plan-process-call.ts';
import { NotConfiguredError, ToolFailedError } from './errors.ts';
import { runProcess } from './process.ts';

/** Assumes the plan AWS role for `session` (sts:AssumeRole with its session policy), as the harness. */
export type PlanAwsAssumer = (
  session: PlanAwsSession,
  durationSeconds: number,
) => Promise<PlanAwsCredentials>;

/** STS's bounds of a role session's duration. */
const MIN_SESSION_SECONDS = 900;
const MAX_SESSION_SECONDS = 3600;

/** A session long enough for the process (and a minute more), within STS's bounds. */
export function sessionSeconds(timeoutMs: number): number {
  return Math.min(MAX_SESSION_SECONDS, Math.max(MIN_SESSION_SECONDS, Math.ceil(timeoutMs / 1000) + 60));
}

/**
 * Invokes the plan-process function synchronously with each call; its answer is checked at the
 * edge. A call that declares AWS is sent with the session `assumePlanAws` assumed for it here, in
 * the harness: the function never holds a role it could assume without the session policy.
 */
export function planProcessInvoker(
  lambda: LambdaClient,
  functionName: string,
  assumePlanAws?: PlanAwsAssumer,
): PlanProcessInvoker {
  return async (call, signal) => {
    const { aws, ...rest } = PlanProcessCallSchema.parse(call);
    let awsCredentials: PlanAwsCredentials | undefined;
    if (aws) {
      if (!assumePlanAws)
        throw new NotConfiguredError(
          'a step declares AWS access but this function has no plan AWS role to assume: set PLANGATE_PLAN_AWS_ROLE_ARN',
        );
      awsCredentials = await assumePlanAws(aws, sessionSeconds(rest.timeoutMs));
    }
    const event: PlanProcessEvent = { ...rest, ...(awsCredentials ? { awsCredentials } : {}) };
    const out = await lambda.send(
      new InvokeCommand({
        FunctionName: functionName,
        Payload: Buffer.from(JSON.stringify(PlanProcessEventSchema.parse(event))),
      }),
      { abortSignal: signal },
    );
    const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : 'null';
    if (out.FunctionError) {
      const error = JSON.parse(text) as { errorType?: string; errorMessage?: string };
      throw new ToolFailedError(
        `the plan-process function (${functionName}) failed: ${error.errorMessage ?? out.FunctionError}`,
      );
    }
    return PlanProcessResultSchema.parse(JSON.parse(text));
  };
}

export interface PlanProcessHostDeps {
  /** Where the files a call returns are made, and where a call of no run's workspace runs (Lambda: /tmp). */
  readonly workdir: string;
  /**
   * Where the runs' workspaces live (the mount of the workspace file system, lib/cdk/plan-code.ts):
   * a call of a run runs in that run's directory there, whichever container takes it.
   * @default none: a call of a run is refused (its files would stay in this container's /tmp)
   */
  readonly workspaceRoot?: string;
  /** The region the credentials are for (AWS_REGION of the process). */
  readonly region?: string;
}

/**
 * Runs one call here (this host has no harness authority to protect): each of its `files` a fresh
 * file of this host's, the AWS session's credentials in its environment when the event carries them.
 */
export async function servePlanProcessCall(
  event: PlanProcessEvent,
  deps: PlanProcessHostDeps,
): Promise<PlanProcessResult> {
  const parsed = PlanProcessEventSchema.parse(event);
  const cwd = await callDirectory(parsed.workspace, parsed.cwd, deps);
  const dir = await mkdtemp(join(deps.workdir, 'plangate-call-'));
  try {
    const files = Object.fromEntries(parsed.files.map((name, i) => [name, join(dir, `file-${i}`)]));
    for (const path of Object.values(files)) await writeFile(path, '');
    const credentials = parsed.awsCredentials;
    const result = await runProcess({
      command: parsed.command,
      cwd,
      env: {
        ...parsed.env,
        ...files,
        ...(credentials
          ? {
              AWS_ACCESS_KEY_ID: credentials.accessKeyId,
              AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
              AWS_SESSION_TOKEN: credentials.sessionToken,
              ...(deps.region ? { AWS_REGION: deps.region, AWS_DEFAULT_REGION: deps.region } : {}),
            }
          : {}),
      },
      timeoutMs: parsed.timeoutMs,
      ...(parsed.maxOutputBytes !== undefined ? { maxOutputBytes: parsed.maxOutputBytes } : {}),
      ...(parsed.stdin !== undefined ? { stdin: parsed.stdin } : {}),
    });
    const written: Record<string, string> = {};
    for (const [name, path] of Object.entries(files))
      written[name] = await readFile(path, 'utf8').catch(() => '');
    return { ...result, files: written };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A run's directory under the workspace root: the execution's name (what the console shows) made
 * safe for a path, and a digest of its whole ARN so two machines' executions of one name differ.
 */
export function workspaceDirectoryName(executionArn: string): string {
  const name = (executionArn.slice(executionArn.lastIndexOf(':') + 1) || 'run')
    .replace(/[^\w.-]/g, '_')
    .slice(0, 80);
  return `${name}-${createHash('sha256').update(executionArn).digest('hex').slice(0, 16)}`;
}

/** Where the call runs: in its run's workspace (made on first use), a relative cwd inside it. */
async function callDirectory(
  workspace: string | undefined,
  cwd: string | undefined,
  deps: PlanProcessHostDeps,
): Promise<string> {
  if (workspace === undefined) return cwd ?? deps.workdir;
  if (!deps.workspaceRoot)
    throw new NotConfiguredError(
      "a run's command came to a plan-process function with no workspace file system (PLANGATE_WORKSPACE_ROOT): its files would be lost with this container",
    );
  const root = join(deps.workspaceRoot, workspaceDirectoryName(workspace));
  await mkdir(root, { recursive: true });
  return cwd === undefined ? root : resolve(root, cwd);
}
