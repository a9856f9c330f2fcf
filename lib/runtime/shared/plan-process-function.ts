/**
 * The plan-process function, both sides of its one call: the harness's invoker (the step runner
 * and the contract checker hand it every plan process on AWS) and what the function does with a
 * call (lambdas/plan-process.ts). The function's role may write its own logs and assume the plan
 * AWS role, nothing else: a process it starts, and whatever that process reads of its parent,
 * holds none of the harness's authority. A call that declares AWS gets that role's credentials,
 * assumed for the run with the session policy the step declared; any other call gets none.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import {
  type PlanAwsSession,
  type PlanProcessCall,
  PlanProcessCallSchema,
  type PlanProcessInvoker,
  type PlanProcessResult,
  PlanProcessResultSchema,
} from '../sandbox/plan-process-call.ts';
import { ToolFailedError } from './errors.ts';
import { runProcess } from './process.ts';

/** Invokes the plan-process function synchronously with each call; its answer is checked at the edge. */
export function planProcessInvoker(lambda: LambdaClient, functionName: string): PlanProcessInvoker {
  return async (call, signal) => {
    const out = await lambda.send(
      new InvokeCommand({
        FunctionName: functionName,
        Payload: Buffer.from(JSON.stringify(PlanProcessCallSchema.parse(call))),
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

/** Temporary credentials of the plan AWS role. */
export interface PlanAwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

export interface PlanProcessHostDeps {
  /** Where a call without its own cwd runs (Lambda: /tmp, its only writable directory). */
  readonly workdir: string;
  /** The region the credentials are for (AWS_REGION of the process). */
  readonly region?: string;
  /** Assumes the plan AWS role for `session` (sts:AssumeRole with its session policy). */
  readonly assumeRole: (session: PlanAwsSession, durationSeconds: number) => Promise<PlanAwsCredentials>;
}

/** STS's bounds of a role session's duration. */
const MIN_SESSION_SECONDS = 900;
const MAX_SESSION_SECONDS = 3600;

/**
 * Runs one call here (this host has no harness authority to protect): each of its `files` a fresh
 * file of this host's, the AWS session's credentials in its environment when it declares one.
 */
export async function servePlanProcessCall(
  call: PlanProcessCall,
  deps: PlanProcessHostDeps,
): Promise<PlanProcessResult> {
  const parsed = PlanProcessCallSchema.parse(call);
  const dir = await mkdtemp(join(deps.workdir, 'plangate-call-'));
  try {
    const files = Object.fromEntries(parsed.files.map((name, i) => [name, join(dir, `file-${i}`)]));
    for (const path of Object.values(files)) await writeFile(path, '');
    const credentials = parsed.aws
      ? await deps.assumeRole(
          parsed.aws,
          Math.min(
            MAX_SESSION_SECONDS,
            Math.max(MIN_SESSION_SECONDS, Math.ceil(parsed.timeoutMs / 1000) + 60),
          ),
        )
      : undefined;
    const result = await runProcess({
      command: parsed.command,
      cwd: parsed.cwd ?? deps.workdir,
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
