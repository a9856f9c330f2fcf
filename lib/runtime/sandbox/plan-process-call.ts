/**
 * One plan process as data: what the harness asks a host to run (`PlanProcessCall`) and what it
 * hands back (`PlanProcessResult`). Locally the harness's own process is the host (`runProcess`);
 * on AWS the host is the plan-process function (lambdas/plan-process.ts), whose role holds none of
 * the harness's authority: its event is the call with the AWS session already assumed by the
 * harness (`PlanProcessEvent`: credentials, never a role to assume), and its result is the result.
 */
import { z } from 'zod';

/**
 * The AWS credentials a plan process gets: the plan AWS role assumed for one run (the session
 * named after it) with the session policy its step declared. Absent: no credentials at all.
 */
export const PlanAwsSessionSchema = z.strictObject({
  /** `sts:AssumeRole`'s RoleSessionName (CloudTrail shows it on every call the process makes). */
  sessionName: z.string().regex(/^[\w+=,.@-]{2,64}$/),
  /** The session policy (IAM policy JSON): what the step declared, never more than the role allows. */
  policy: z.string().min(1),
});
export type PlanAwsSession = z.infer<typeof PlanAwsSessionSchema>;

/** What any host needs to run one process. */
const PlanProcessShape = {
  /** The `bash -c` text, its run-time values in `env` (never spliced into it). */
  command: z.string(),
  cwd: z.string().min(1).optional(),
  /** What the harness hands the process: the step's declared env, the tool's PLANGATE_*. */
  env: z.record(z.string(), z.string()).default({}),
  timeoutMs: z.number().int().positive(),
  maxOutputBytes: z.number().int().positive().optional(),
  stdin: z.string().optional(),
  /**
   * Names in `env` whose values are files the process writes and the harness reads back (its
   * `$PLANGATE_OUTPUT`): the host gives the process a fresh file of its own under each name and
   * returns what was written to it.
   */
  files: z.array(z.string().min(1)).default([]),
  /**
   * The run whose workspace the process shares (its execution ARN): the plan-process function
   * runs it in that run's directory of the workspace file system (docs/deploy.md, "Where steps run
   * on AWS"), a relative `cwd` inside it.
   */
  workspace: z.string().min(1).optional(),
};

export const PlanProcessCallSchema = z.strictObject({
  ...PlanProcessShape,
  aws: PlanAwsSessionSchema.optional(),
});
export type PlanProcessCall = z.input<typeof PlanProcessCallSchema>;

/** Temporary credentials of one plan AWS role session (what STS AssumeRole answered the harness). */
export const PlanAwsCredentialsSchema = z.strictObject({
  accessKeyId: z.string().min(1),
  secretAccessKey: z.string().min(1),
  sessionToken: z.string().min(1),
});
export type PlanAwsCredentials = z.infer<typeof PlanAwsCredentialsSchema>;

/**
 * The plan-process function's event: the call, its AWS session assumed by the harness (the step
 * runner or contract checker, which alone may assume the plan AWS role, with the step's session
 * policy). Absent credentials: the process gets none, and the function could get none either.
 */
export const PlanProcessEventSchema = z.strictObject({
  ...PlanProcessShape,
  awsCredentials: PlanAwsCredentialsSchema.optional(),
});
export type PlanProcessEvent = z.input<typeof PlanProcessEventSchema>;
/** One request a plan process made of the harness's network proxy (lib/runtime/sandbox/network-proxy.ts). */
export const NetworkRecordSchema = z.strictObject({
  /** What was asked: `CONNECT host:port`, `GET http://host/path`. */
  request: z.string(),
  /** Whether the step declared the host (and its address may be reached). */
  allowed: z.boolean(),
  /** Why it was refused, or what came of it. */
  detail: z.string(),
});
export type NetworkRecord = z.infer<typeof NetworkRecordSchema>;

/** How one plan process ended. */
export const ProcessResultSchema = z.strictObject({
  /** null when the process was killed by a signal. */
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean(),
  timedOut: z.boolean(),
  aborted: z.boolean(),
  durationMs: z.number().nonnegative(),
  /** Whether it ran in the bubblewrap sandbox. */
  sandboxed: z.boolean(),
  /** stderr lines saying a write was refused (outside the workspace, read-only). */
  refusedWrites: z.array(z.string()),
  /** What it asked of the network proxy (a step that declares `network`), refused or not. */
  network: z.array(NetworkRecordSchema).default([]),
});
export type ProcessResult = z.infer<typeof ProcessResultSchema>;

export const PlanProcessResultSchema = ProcessResultSchema.extend({
  /** What the process wrote to each of the call's `files`, by name. */
  files: z.record(z.string(), z.string()),
});
export type PlanProcessResult = z.infer<typeof PlanProcessResultSchema>;

/** Runs one call on another host (the plan-process function) and returns its result. */
export type PlanProcessInvoker = (call: PlanProcessCall, signal?: AbortSignal) => Promise<PlanProcessResult>;
