/**
 * The failure classifier: maps a failure to transient / permission / invalid_input / logic /
 * unrecoverable / unknown. Errors the harness already named (`Plangate.*`) keep their class;
 * otherwise the plan's recipes decide, then the defaults below; anything unmatched is
 * `unknown`, which always asks a person.
 */
import type { FailureClass } from '../plan/schema.ts';
import type { FailureFacts } from './errors.ts';
import { failureClassOfError } from './payloads.ts';

/** How a recipe recognises its failures (lib/plan/schema.ts DetectionSchema, defaults applied or not). */
export interface DetectionRules {
  readonly errorNames?: readonly string[];
  readonly messagePatterns?: readonly string[];
  readonly httpStatuses?: readonly number[];
  readonly exitCodes?: readonly number[];
}

/** Recipes by class, as the plan (or the classifier request) carries them. */
export type RecipeDetections = Partial<
  Record<FailureClass, { readonly detect?: DetectionRules } | undefined>
>;

export interface Classification {
  readonly failureClass: FailureClass;
  /** Which rule set decided: the harness's own error name, the plan's recipe, the defaults, or none. */
  readonly source: 'named' | 'recipe' | 'default' | 'none';
  /** The rule that matched, e.g. `httpStatus 503` or `errorName ThrottlingException`. */
  readonly rule: string;
}

/** Classes in the order rules are tried at each level (most specific class first on a tie). */
const CLASS_ORDER: readonly Exclude<FailureClass, 'unknown'>[] = [
  'permission',
  'invalid_input',
  'unrecoverable',
  'logic',
  'transient',
];

/**
 * Sensible defaults when no recipe matched: timeouts, throttling, 5xx and dropped connections are
 * transient; 401/403/EACCES/AccessDenied are permission; schema and validation errors are invalid
 * input; a failed contract is logic; a missing command or a gone resource is unrecoverable.
 */
export const DEFAULT_DETECTIONS: Readonly<Record<Exclude<FailureClass, 'unknown'>, DetectionRules>> = {
  transient: {
    errorNames: [
      'TimeoutError',
      'States.Timeout',
      'ThrottlingException',
      'Throttling',
      'TooManyRequestsException',
      'RequestLimitExceeded',
      'ProvisionedThroughputExceededException',
      'ServiceUnavailable',
      'ServiceUnavailableException',
      'InternalServerError',
      'InternalFailure',
      'Lambda.ServiceException',
      'Lambda.AWSLambdaException',
      'Lambda.SdkClientException',
      'Lambda.TooManyRequestsException',
      'ECONNRESET',
      'ETIMEDOUT',
      'ECONNREFUSED',
      'ECONNABORTED',
      'EPIPE',
      'EAI_AGAIN',
      'UND_ERR_CONNECT_TIMEOUT',
      'UND_ERR_SOCKET',
    ],
    httpStatuses: [408, 429, 500, 502, 503, 504],
    messagePatterns: [
      '\\btim(?:ed|e)[ -]?out\\b',
      'throttl',
      'rate limit',
      'temporarily unavailable',
      'connection reset',
      'socket hang up',
    ],
  },
  permission: {
    errorNames: [
      'AccessDenied',
      'AccessDeniedException',
      'UnauthorizedOperation',
      'UnrecognizedClientException',
      'InvalidClientTokenId',
      'ExpiredToken',
      'ExpiredTokenException',
      'NotAuthorized',
      'EACCES',
      'EPERM',
    ],
    httpStatuses: [401, 403],
    messagePatterns: [
      'access denied',
      'permission denied',
      'unauthori[sz]ed',
      '\\bforbidden\\b',
      'not authorized',
    ],
  },
  invalid_input: {
    errorNames: [
      'InvalidInput',
      'NotConfigured',
      'ValidationException',
      'ValidationError',
      'ZodError',
      'SyntaxError',
      'SerializationException',
      'InvalidParameterException',
      'InvalidParameterValueException',
      'InvalidRequestException',
    ],
    httpStatuses: [400, 422],
    messagePatterns: ['invalid (?:input|argument|parameter)', 'malformed', 'failed validation'],
  },
  logic: { errorNames: ['ContractFailed'] },
  unrecoverable: {
    errorNames: ['ResourceNotFoundException', 'ENOENT'],
    httpStatuses: [410, 501],
    // 126: found but not executable is permission-like, 127: command not found.
    exitCodes: [127],
  },
};

/** Classifies a failure: the harness's own names, then `recipes`, then DEFAULT_DETECTIONS; unmatched → unknown. */
export function classifyFailure(facts: FailureFacts, recipes: RecipeDetections = {}): Classification {
  const named = failureClassOfError(facts.name);
  if (named && named !== 'unknown')
    return { failureClass: named, source: 'named', rule: `errorName ${facts.name}` };
  const fromRecipes = matchRules(facts, (c) => recipes[c]?.detect);
  if (fromRecipes) return { ...fromRecipes, source: 'recipe' };
  const fromDefaults = matchRules(facts, (c) => DEFAULT_DETECTIONS[c]);
  if (fromDefaults) return { ...fromDefaults, source: 'default' };
  return { failureClass: 'unknown', source: 'none', rule: 'no rule matched' };
}

/** Tries the most specific evidence first (name or code, then HTTP status, exit code, message) across classes. */
function matchRules(
  facts: FailureFacts,
  rulesOf: (c: Exclude<FailureClass, 'unknown'>) => DetectionRules | undefined,
): Omit<Classification, 'source'> | undefined {
  const names = [facts.name, facts.code].filter((n): n is string => typeof n === 'string' && n !== '');
  const levels: ((rules: DetectionRules) => string | undefined)[] = [
    (r) => {
      const name = names.find((n) => r.errorNames?.includes(n));
      return name ? `errorName ${name}` : undefined;
    },
    (r) =>
      facts.httpStatus !== undefined && r.httpStatuses?.includes(facts.httpStatus)
        ? `httpStatus ${facts.httpStatus}`
        : undefined,
    (r) =>
      facts.exitCode !== undefined && r.exitCodes?.includes(facts.exitCode)
        ? `exitCode ${facts.exitCode}`
        : undefined,
    (r) => {
      const pattern = r.messagePatterns?.find((p) => safeRegExp(p)?.test(facts.message));
      return pattern ? `messagePattern /${pattern}/` : undefined;
    },
  ];
  for (const level of levels) {
    for (const failureClass of CLASS_ORDER) {
      const rules = rulesOf(failureClass);
      const rule = rules && level(rules);
      if (rule) return { failureClass, rule };
    }
  }
  return undefined;
}

const regexCache = new Map<string, RegExp | null>();

/** Case-insensitive; a pattern that does not compile matches nothing (the plan validator reports it). */
function safeRegExp(pattern: string): RegExp | null {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    try {
      re = new RegExp(pattern, 'i');
    } catch {
      re = null;
    }
    regexCache.set(pattern, re);
  }
  return re;
}
