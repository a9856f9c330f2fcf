/**
 * Seed 000's recovery recipes per failure class, how a failure is recognised as
 * belonging to a class, and the recipes a given plan and step actually use.
 */
import { FAILURE_CLASSES, type FailureClass, type Plan, type RecoveryRecipe, type Step } from './schema.ts';

type Detection = RecoveryRecipe['detect'];

/**
 * Default detection rules per class; the runtime classifier reuses them. `unknown`
 * has none: it is whatever no rule matched.
 */
export const DEFAULT_DETECTION: Readonly<Record<FailureClass, Detection>> = {
  transient: {
    errorNames: [
      'TimeoutError',
      'States.Timeout',
      'ThrottlingException',
      'TooManyRequestsException',
      'Lambda.TooManyRequestsException',
      'Lambda.ServiceException',
      'Lambda.SdkClientException',
      'ServiceUnavailable',
      'ServiceUnavailableException',
      'RequestTimeout',
      'ProvisionedThroughputExceededException',
    ],
    messagePatterns: [
      'ETIMEDOUT',
      'ECONNRESET',
      'ECONNREFUSED',
      'EPIPE',
      'EAI_AGAIN',
      'socket hang up',
      'timed? ?out',
      'throttl',
      'rate limit',
      'temporarily unavailable',
      // The engine stopped (killed, or closed) while the step's call was under way: the
      // infrastructure failed, not the step, as a Lambda.ServiceException would say on AWS.
      'engine stopped while this task was running',
    ],
    httpStatuses: [408, 429, 500, 502, 503, 504],
    exitCodes: [124],
  },
  permission: {
    errorNames: [
      'AccessDenied',
      'AccessDeniedException',
      'UnauthorizedException',
      'UnrecognizedClientException',
      'ExpiredTokenException',
    ],
    messagePatterns: [
      'EACCES',
      'EPERM',
      'access denied',
      'permission denied',
      'forbidden',
      'unauthori[sz]ed',
    ],
    httpStatuses: [401, 403],
    exitCodes: [126],
  },
  invalid_input: {
    errorNames: [
      'ValidationException',
      'ValidationError',
      'InvalidParameterException',
      'InvalidParameterValueException',
      'SerializationException',
    ],
    messagePatterns: ['invalid (?:input|argument|parameter)', 'malformed', 'validation (?:error|failed)'],
    httpStatuses: [400, 422],
    exitCodes: [],
  },
  logic: {
    errorNames: ['ContractFailed', 'AssertionError'],
    messagePatterns: ['contract (?:failed|did not pass)', 'assertion'],
    httpStatuses: [],
    exitCodes: [1],
  },
  unrecoverable: {
    errorNames: ['ResourceNotFoundException', 'NotFound', 'States.Runtime'],
    messagePatterns: ['ENOENT', 'command not found', 'no such file'],
    httpStatuses: [404, 410],
    exitCodes: [127],
  },
  unknown: { errorNames: [], messagePatterns: [], httpStatuses: [], exitCodes: [] },
};

/** Seed 000's table: transient retries 5 s then 30 s; permission/invalid input ask; logic retries once; unrecoverable and unknown ask. */
export const DEFAULT_RECOVERY: Readonly<Record<FailureClass, RecoveryRecipe>> = {
  transient: {
    detect: DEFAULT_DETECTION.transient,
    maxAttempts: 2,
    intervalSeconds: 5,
    backoffRate: 6,
    escalation: 'ask',
  },
  permission: {
    detect: DEFAULT_DETECTION.permission,
    maxAttempts: 0,
    intervalSeconds: 1,
    backoffRate: 2,
    escalation: 'ask',
  },
  invalid_input: {
    detect: DEFAULT_DETECTION.invalid_input,
    maxAttempts: 0,
    intervalSeconds: 1,
    backoffRate: 2,
    escalation: 'ask',
  },
  logic: {
    detect: DEFAULT_DETECTION.logic,
    maxAttempts: 1,
    intervalSeconds: 1,
    backoffRate: 2,
    escalation: 'ask',
  },
  unrecoverable: {
    detect: DEFAULT_DETECTION.unrecoverable,
    maxAttempts: 0,
    intervalSeconds: 1,
    backoffRate: 2,
    escalation: 'ask',
  },
  unknown: {
    detect: DEFAULT_DETECTION.unknown,
    maxAttempts: 0,
    intervalSeconds: 1,
    backoffRate: 2,
    escalation: 'ask',
  },
};

/**
 * The order classes are tried in: specific before general, so "403 … timed out" is a
 * permission failure and exit code 1 (logic) only decides when nothing else matched.
 */
export const CLASSIFICATION_ORDER: readonly FailureClass[] = [
  'permission',
  'invalid_input',
  'transient',
  'unrecoverable',
  'logic',
];

export type RecoveryTable = Readonly<Record<FailureClass, RecoveryRecipe>>;

export interface EffectiveRecovery {
  /** The plan's recipes: defaults with the plan's `recovery` overrides. */
  readonly plan: RecoveryTable;
  /** Per step id: the plan's recipes with the step's `onFail` applied. */
  readonly steps: ReadonlyMap<string, RecoveryTable>;
}

/**
 * The recipes in force. A plan override replaces a class's recipe whole (as parsed,
 * with the schema's defaults). A step's `onFail` (seed 004's `retry(N), then
 * escalate|abort`) sets the retries for contract failures (`logic`) and unclassified
 * failures (`unknown`), and what happens once retries are exhausted for every class.
 */
export function effectiveRecovery(plan: Pick<Plan, 'recovery' | 'steps'>): EffectiveRecovery {
  const planTable = { ...DEFAULT_RECOVERY } as Record<FailureClass, RecoveryRecipe>;
  for (const failureClass of FAILURE_CLASSES) {
    const override = plan.recovery[failureClass];
    if (override) planTable[failureClass] = override;
  }
  const steps = new Map<string, RecoveryTable>();
  for (const step of plan.steps) steps.set(step.id, stepRecovery(planTable, step));
  return { plan: planTable, steps };
}

function stepRecovery(planTable: RecoveryTable, step: Pick<Step, 'onFail'>): RecoveryTable {
  const onFail = step.onFail;
  if (!onFail) return planTable;
  const table = {} as Record<FailureClass, RecoveryRecipe>;
  for (const failureClass of FAILURE_CLASSES) {
    const recipe = planTable[failureClass];
    table[failureClass] = {
      ...recipe,
      maxAttempts: stepRetries(failureClass, recipe.maxAttempts, onFail),
      escalation: onFail.escalation,
    };
  }
  return table;
}

/**
 * How often a step retries a failure of `failureClass`: its `onFail` retries for contract
 * (`logic`) and unclassified failures, else the class recipe's `maxAttempts`.
 */
export function stepRetries(
  failureClass: FailureClass,
  recipeMaxAttempts: number,
  onFail: Pick<NonNullable<Step['onFail']>, 'retries'> | undefined,
): number {
  return onFail && (failureClass === 'logic' || failureClass === 'unknown')
    ? onFail.retries
    : recipeMaxAttempts;
}

/** What the detection rules look at in a failure. */
export interface DetectionFacts {
  readonly errorName?: string;
  readonly message?: string;
  readonly httpStatus?: number;
  readonly exitCode?: number;
}

/** Whether any rule of a detection matches. Message patterns match case-insensitively. */
export function matchesDetection(detect: Detection, facts: DetectionFacts): boolean {
  if (facts.errorName !== undefined && detect.errorNames.includes(facts.errorName)) return true;
  if (facts.httpStatus !== undefined && detect.httpStatuses.includes(facts.httpStatus)) return true;
  if (facts.exitCode !== undefined && detect.exitCodes.includes(facts.exitCode)) return true;
  const message = facts.message;
  if (message === undefined) return false;
  return detect.messagePatterns.some((pattern) => compilePattern(pattern)?.test(message) ?? false);
}

/** The first class (in `CLASSIFICATION_ORDER`) whose detection in `table` matches, else `unknown`. */
export function classifyByDetection(
  facts: DetectionFacts,
  table: RecoveryTable = DEFAULT_RECOVERY,
): FailureClass {
  return CLASSIFICATION_ORDER.find((c) => matchesDetection(table[c].detect, facts)) ?? 'unknown';
}

/** A detection message pattern as a case-insensitive RegExp; undefined if it does not compile. */
export function compilePattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'i');
  } catch {
    return undefined;
  }
}
