/**
 * The environment a plan's process gets: an allow-list, never the harness's own. Whatever the
 * harness holds (AWS credentials and the container/Lambda runtime endpoints that mint them, the
 * store's endpoints and keys, an operator's tokens) stays out unless it is one of a few harmless
 * names or the operator passes it on by name; credentials are refused even then.
 */

/** Names a process needs to behave as a shell does, copied from the harness's environment. */
export const INHERITED_NAMES = [
  'PATH',
  'LANG',
  'LANGUAGE',
  'TERM',
  'TZ',
  'USER',
  'LOGNAME',
  'SHELL',
] as const;

/** Also copied: the locale's LC_* family. */
const INHERITED_PREFIXES = ['LC_'] as const;

/**
 * Never given to plan code, whoever asks: AWS credentials and every way to get them (the container
 * and Lambda runtime APIs, web identity, profiles and their files, SSO), and plangate's own settings.
 * A step that needs AWS gets the plan AWS role (assumed per run, lib/runtime/steps/plan-aws.ts), not the harness's.
 */
const REFUSED = [
  /^AWS_ACCESS_KEY_ID$/,
  /^AWS_SECRET_ACCESS_KEY$/,
  /^AWS_SESSION_TOKEN$/,
  /^AWS_SECURITY_TOKEN$/,
  /^AWS_CREDENTIAL_EXPIRATION$/,
  /^AWS_CONTAINER_/,
  /^AWS_LAMBDA_/,
  /^AWS_WEB_IDENTITY_TOKEN_FILE$/,
  /^AWS_ROLE_ARN$/,
  /^AWS_ROLE_SESSION_NAME$/,
  /^AWS_PROFILE$/,
  /^AWS_DEFAULT_PROFILE$/,
  /^AWS_SHARED_CREDENTIALS_FILE$/,
  /^AWS_CONFIG_FILE$/,
  /^AWS_SSO_/,
  /^AWS_EC2_METADATA_/,
  /^ECS_CONTAINER_METADATA_URI/,
  /^_X_AMZN_TRACE_ID$/,
] as const;

/** Whether a variable may never reach plan code. */
export function isRefusedName(name: string): boolean {
  return REFUSED.some((pattern) => pattern.test(name));
}

/**
 * Files a non-interactive shell runs before its command: never the harness's (an operator's
 * BASH_ENV stalled or changed every step), even passed on by name; a plan that declares one in
 * its own env gets it, as the gate showed it.
 */
export const STARTUP_FILE_NAMES = ['BASH_ENV', 'ENV'] as const;

/** The harness's environment without {@link STARTUP_FILE_NAMES}: for the shells it starts for itself. */
export function withoutStartupFiles(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && !(STARTUP_FILE_NAMES as readonly string[]).includes(name)) copy[name] = value;
  return copy;
}

export interface PlanEnvironmentProps {
  /** The harness's environment, to copy the allow-listed names from. */
  readonly harness: Readonly<Record<string, string | undefined>>;
  /** What the harness hands this process: the step's declared env, PLANGATE_* of the tool. */
  readonly given?: Readonly<Record<string, string>>;
  /** Names the operator passes on from the harness's environment (PLANGATE_SANDBOX_PASS_ENV). */
  readonly passed?: readonly string[];
  /** The process's HOME. */
  readonly home?: string;
  /** The network proxy's URL inside the sandbox (a step that declares hosts): every proxy variable names it. */
  readonly proxy?: string;
}

/** The variables clients read their proxy from (curl, pip, npm, git, Node's undici with a flag, Python's urllib). */
const PROXY_NAMES = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'] as const;

/**
 * The allow-listed environment, with `given` last (it overrides). What is copied from the harness
 * never includes a credential; what the plan itself declares (and the gate showed) is its own.
 */
export function planEnvironment(props: PlanEnvironmentProps): Record<string, string> {
  const env: Record<string, string> = {};
  const copy = (name: string): void => {
    const value = props.harness[name];
    if (
      value !== undefined &&
      !isRefusedName(name) &&
      !(STARTUP_FILE_NAMES as readonly string[]).includes(name)
    )
      env[name] = value;
  };
  for (const name of INHERITED_NAMES) copy(name);
  for (const name of Object.keys(props.harness))
    if (INHERITED_PREFIXES.some((prefix) => name.startsWith(prefix))) copy(name);
  for (const name of props.passed ?? []) copy(name);
  if (props.home !== undefined) env.HOME = props.home;
  else copy('HOME');
  // The proxy last: a declared env cannot point clients past it (there is no other route anyway).
  const proxy =
    props.proxy === undefined
      ? {}
      : { ...Object.fromEntries(PROXY_NAMES.map((name) => [name, props.proxy])), NO_PROXY: '', no_proxy: '' };
  return { ...env, ...props.given, ...proxy };
}
