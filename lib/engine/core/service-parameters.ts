/**
 * The checks AWS makes on an optimized integration's parameters before it schedules the task: a
 * task whose parameters fail them is never scheduled, and the execution fails with States.Runtime
 * (`The Parameters '<json>' could not be used to start the Task: [<problems>]`). Only the API
 * Gateway integration (`apigateway:invoke`) is checked so far, by its documented request format.
 */
import { jsonText } from '../dataflow/index.ts';
import { isJsonObject, StatesError } from '../types.ts';

/** What is wrong with a task's parameters, one phrase per problem (none: they may be used). */
export type ParameterCheck = (parameters: unknown) => string[];

const HTTP_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'HEAD',
  'OPTIONS',
]);
const AUTH_TYPES: ReadonlySet<string> = new Set(['NO_AUTH', 'IAM_ROLE', 'RESOURCE_POLICY']);
/** Headers Step Functions does not let a task send (AWS's documentation, case-insensitive). */
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'connection',
  'content-md5',
  'expect',
  'host',
  'max-forwards',
  'proxy-authenticate',
  'server',
  'te',
  'transfer-encoding',
  'trailer',
  'upgrade',
  'via',
  'www-authenticate',
]);
const FORBIDDEN_HEADER_PREFIXES = ['x-forwarded', 'x-amz'];

/** Headers and QueryParameters: each key takes a list of strings (`{"key": ["v1", "v2"]}`). */
function isStringLists(value: unknown): boolean {
  return (
    isJsonObject(value) &&
    Object.values(value).every((list) => Array.isArray(list) && list.every((v) => typeof v === 'string'))
  );
}

const invalidFormat = (field: string) => `The value of the field '${field}' has an invalid format`;

function apiGatewayInvokeProblems(parameters: unknown): string[] {
  if (!isJsonObject(parameters)) return ['The Parameters must be a JSON object'];
  const problems: string[] = [];
  const { ApiEndpoint, Method, Headers, Stage, Path, QueryParameters, AllowNullValues, AuthType } =
    parameters;
  if (ApiEndpoint === undefined) problems.push("The field 'ApiEndpoint' is required but was missing");
  else if (typeof ApiEndpoint !== 'string' || ApiEndpoint === '') problems.push(invalidFormat('ApiEndpoint'));
  if (Method === undefined) problems.push("The field 'Method' is required but was missing");
  else if (typeof Method !== 'string' || !HTTP_METHODS.has(Method)) problems.push(invalidFormat('Method'));
  if (Headers !== undefined) {
    if (!isStringLists(Headers)) problems.push(invalidFormat('Headers'));
    else {
      const forbidden = Object.keys(Headers as object).filter((name) => {
        const lower = name.toLowerCase();
        return FORBIDDEN_HEADERS.has(lower) || FORBIDDEN_HEADER_PREFIXES.some((p) => lower.startsWith(p));
      });
      if (forbidden.length > 0)
        problems.push(`The 'Headers' field contains unsupported values: ${forbidden.join(', ')}`);
    }
  }
  if (Stage !== undefined && typeof Stage !== 'string') problems.push(invalidFormat('Stage'));
  if (Path !== undefined && typeof Path !== 'string') problems.push(invalidFormat('Path'));
  if (QueryParameters !== undefined && !isStringLists(QueryParameters))
    problems.push(invalidFormat('QueryParameters'));
  if (AllowNullValues !== undefined && typeof AllowNullValues !== 'boolean')
    problems.push(invalidFormat('AllowNullValues'));
  if (AuthType !== undefined && (typeof AuthType !== 'string' || !AUTH_TYPES.has(AuthType)))
    problems.push(invalidFormat('AuthType'));
  return problems;
}

/**
 * The check for a service integration's parameters (`resourceType` `apigateway`, `resource`
 * `invoke` for `arn:aws:states:::apigateway:invoke`), if AWS makes one before scheduling its tasks.
 */
export function parameterCheckFor(resourceType: string, resource: string): ParameterCheck | undefined {
  if (resourceType === 'apigateway' && /^invoke(\.|$)/.test(resource)) return apiGatewayInvokeProblems;
  return undefined;
}

/** Throws AWS's States.Runtime failure when `check` finds problems in `parameters`. */
export function assertUsableParameters(check: ParameterCheck, parameters: unknown): void {
  const problems = check(parameters);
  if (problems.length === 0) return;
  throw new StatesError(
    'States.Runtime',
    `The Parameters '${jsonText(parameters)}' could not be used to start the Task: [${problems.join(', ')}]`,
  );
}
