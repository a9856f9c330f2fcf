/**
 * STS AssumeRole as the IAM simulator's front serves it (AWS Query protocol: a form-encoded POST,
 * an XML answer). Only the parameters whose effect the simulator evaluates are taken: the role,
 * the session's name and duration, and an inline session policy (which every request of the
 * session is then put to, evaluate.ts). Anything else (managed session policies `PolicyArns`,
 * tags, source identity, MFA, external ids) is refused with its name rather than ignored.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type NamedPolicy, PolicyDocumentSchema } from './policy-document.ts';

/** STS's bounds of a role session (the roles of the template keep the default maximum, one hour). */
const MIN_SESSION_SECONDS = 900;
const MAX_SESSION_SECONDS = 3600;

const AssumeRoleParamsSchema = z.strictObject({
  Action: z.literal('AssumeRole'),
  Version: z.literal('2011-06-15'),
  RoleArn: z.string().regex(/^arn:aws:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'RoleArn is not a role ARN'),
  RoleSessionName: z.string().regex(/^[\w+=,.@-]{2,64}$/, 'RoleSessionName must match [\\w+=,.@-]{2,64}'),
  Policy: z.string().min(1).optional(),
  DurationSeconds: z.coerce
    .number()
    .int()
    .min(MIN_SESSION_SECONDS)
    .max(
      MAX_SESSION_SECONDS,
      `DurationSeconds exceeds the role's maximum session duration (${MAX_SESSION_SECONDS})`,
    )
    .default(MAX_SESSION_SECONDS),
});

export interface AssumeRoleRequest {
  readonly roleArn: string;
  readonly sessionName: string;
  readonly durationSeconds: number;
  readonly sessionPolicy?: NamedPolicy;
}

export type StsErrorCode =
  | 'AccessDenied'
  | 'InvalidClientTokenId'
  | 'ExpiredToken'
  | 'SignatureDoesNotMatch'
  | 'MissingAuthenticationToken'
  | 'MalformedPolicyDocument'
  | 'ValidationError'
  | 'InvalidAction'
  | 'InternalFailure';

export type ParsedAssumeRole =
  | { readonly ok: true; readonly request: AssumeRoleRequest }
  | { readonly ok: false; readonly code: StsErrorCode; readonly message: string };

/** The AssumeRole a form body asks for, or why it is refused. */
export function parseAssumeRole(body: Buffer): ParsedAssumeRole {
  const form = Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  if (form.Action !== 'AssumeRole')
    return {
      ok: false,
      code: 'InvalidAction',
      message: `the IAM simulator serves sts:AssumeRole only, not ${form.Action ?? '(no Action)'}`,
    };
  const parsed = AssumeRoleParamsSchema.safeParse(form);
  if (!parsed.success) {
    const unevaluated = parsed.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : []));
    return {
      ok: false,
      code: 'ValidationError',
      message:
        unevaluated.length > 0
          ? `the IAM simulator does not evaluate ${unevaluated.join(', ')} of sts:AssumeRole: refused (fail closed)`
          : parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`).join('; '),
    };
  }
  const { RoleArn, RoleSessionName, Policy, DurationSeconds } = parsed.data;
  let sessionPolicy: NamedPolicy | undefined;
  if (Policy !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(Policy);
    } catch {
      return { ok: false, code: 'MalformedPolicyDocument', message: 'the session policy is not JSON' };
    }
    const document = PolicyDocumentSchema.safeParse(json);
    if (!document.success)
      return {
        ok: false,
        code: 'MalformedPolicyDocument',
        message: `the session policy is not a policy document the IAM simulator evaluates: ${document.error.message}`,
      };
    sessionPolicy = { name: `session policy of ${RoleSessionName}`, document: document.data };
  }
  return {
    ok: true,
    request: {
      roleArn: RoleArn,
      sessionName: RoleSessionName,
      durationSeconds: DurationSeconds,
      ...(sessionPolicy ? { sessionPolicy } : {}),
    },
  };
}

/** `arn:aws:sts::<account>:assumed-role/<role name>/<session>`: the session as CloudTrail names it. */
export function assumedRoleArn(roleArn: string, sessionName: string): string {
  const [, account, name] = /^arn:aws:iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(roleArn) ?? [];
  return `arn:aws:sts::${account}:assumed-role/${name}/${sessionName}`;
}

const xml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** AssumeRole's answer, as STS writes it. */
export function assumeRoleResponse(
  request: AssumeRoleRequest,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string; expiresAt: Date },
): string {
  return `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser>
      <AssumedRoleId>AROASIMULATED:${xml(request.sessionName)}</AssumedRoleId>
      <Arn>${xml(assumedRoleArn(request.roleArn, request.sessionName))}</Arn>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>${xml(credentials.accessKeyId)}</AccessKeyId>
      <SecretAccessKey>${xml(credentials.secretAccessKey)}</SecretAccessKey>
      <SessionToken>${xml(credentials.sessionToken)}</SessionToken>
      <Expiration>${credentials.expiresAt.toISOString()}</Expiration>
    </Credentials>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata>
</AssumeRoleResponse>`;
}

/** An STS error, as STS writes it. */
export function stsErrorResponse(code: StsErrorCode, message: string): string {
  return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>${code}</Code><Message>${xml(message)}</Message></Error>
  <RequestId>${randomUUID()}</RequestId>
</ErrorResponse>`;
}
