/**
 * What a plan may ask of AWS, and what it may never name. Secrets Manager names are split in two:
 * the platform's own secrets (the Slack bot token and signing secret, anything the harness reads)
 * live under {@link PLATFORM_SECRETS_PREFIX}, plans' secrets under {@link PLAN_SECRETS_PREFIX}.
 * No plan may reference the platform's (a secret it declares, or a resource its steps' `aws`
 * could reach), and no plan-facing role's IAM covers it (lib/cdk). A step's `aws` becomes the
 * session policy of the plan AWS role for its run: {@link sessionPolicy}, the one text the
 * harness hands STS and the gate shows.
 */
import type { AwsAccess, Plan } from './schema.ts';

/** Secrets Manager names of the platform's own secrets: never a plan's. */
export const PLATFORM_SECRETS_PREFIX = 'plangate-platform/';
/** Secrets Manager names plans' secrets (`source: secretsmanager`) live under, by default. */
export const PLAN_SECRETS_PREFIX = 'plangate/plans/';

/** The session policy of a step's run: its grants, each an Allow statement, as canonical JSON. */
export function sessionPolicy(access: AwsAccess): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: access.allow.map((grant) => ({
      Effect: 'Allow',
      Action: grant.actions,
      Resource: grant.resources,
    })),
  });
}

/** A step's grants as people read them at the gate, one line each: `s3:GetObject on arn:aws:s3:::reports/*`. */
export function awsAccessLines(access: AwsAccess): string[] {
  return access.allow.map((grant) => `${grant.actions.join(', ')} on ${grant.resources.join(', ')}`);
}

/** STS refuses a packed session policy above 2,048 characters. */
export const MAX_SESSION_POLICY_CHARS = 2048;

export interface AwsAccessProblem {
  readonly message: string;
  /** JSON pointer into the plan. */
  readonly pointer: string;
}

/** Where a plan names the platform's secrets, or asks for more AWS than one session policy holds. */
export function awsAccessProblems(plan: Plan): AwsAccessProblem[] {
  const problems: AwsAccessProblem[] = [];
  plan.secrets.forEach((secret, i) => {
    if (secret.source === 'secretsmanager' && namesPlatformSecret(secret.ref))
      problems.push({
        message: `secret "${secret.name}" (${secret.ref}) is one of the platform's own secrets (${PLATFORM_SECRETS_PREFIX}…), which no plan may read; keep the plan's secrets under ${PLAN_SECRETS_PREFIX}`,
        pointer: `/secrets/${i}/ref`,
      });
  });
  plan.steps.forEach((step, i) => {
    if (!step.aws) return;
    step.aws.allow.forEach((grant, j) => {
      if (!grant.actions.some(couldBeSecretsManagerAction)) return;
      grant.resources.forEach((resource, k) => {
        if (coversPlatformSecrets(resource))
          problems.push({
            message: `"${resource}" covers the platform's own secrets (${PLATFORM_SECRETS_PREFIX}…), which no plan may reach; name the plan's secrets (e.g. arn:aws:secretsmanager:<region>:<account>:secret:${PLAN_SECRETS_PREFIX}<name>-*)`,
            pointer: `/steps/${i}/aws/allow/${j}/resources/${k}`,
          });
      });
    });
    const length = sessionPolicy(step.aws).length;
    if (length > MAX_SESSION_POLICY_CHARS)
      problems.push({
        message: `step "${step.id}"'s aws grants make a session policy of ${length} characters; STS takes at most ${MAX_SESSION_POLICY_CHARS}: use fewer, broader grants`,
        pointer: `/steps/${i}/aws`,
      });
  });
  return problems;
}

/** A secret id (name or ARN) under the platform's prefix. */
function namesPlatformSecret(ref: string): boolean {
  const name = /^arn:[^:]*:secretsmanager:[^:]*:[^:]*:secret:(.*)$/i.exec(ref)?.[1] ?? ref;
  return name.toLowerCase().startsWith(PLATFORM_SECRETS_PREFIX);
}

/** An IAM glob (`*` any run, `?` one character) as a whole-string, case-insensitive regex. */
function globRegex(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'i');
}

function couldBeSecretsManagerAction(action: string): boolean {
  return globRegex(action).test('secretsmanager:GetSecretValue');
}

/**
 * Whether a resource pattern matches some platform secret's ARN: tried against one in the
 * pattern's own partition, region and account (where it names them) and in any other.
 */
function coversPlatformSecrets(resource: string): boolean {
  const [, partition, , region, account] = resource.split(':');
  const literal = (part: string | undefined, otherwise: string) =>
    part && !/[*?]/.test(part) ? part : otherwise;
  const arn = `arn:${literal(partition, 'aws')}:secretsmanager:${literal(region, 'us-east-1')}:${literal(account, '123456789012')}:secret:${PLATFORM_SECRETS_PREFIX}slack-signing-secret-AbCdEf`;
  return globRegex(resource).test(arn);
}
