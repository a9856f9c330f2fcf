/**
 * Retry blocks from the effective recovery recipes: one retrier per failure class whose recipe
 * retries, on that class's named error (the Lambdas throw `Plangate.<Class>`), plus the Lambda
 * service errors on the transient recipe. `Plangate.ContractFailed` is never retried here:
 * re-checking the same work is pointless, so the classifier loops the whole step instead.
 */
import type { FailureClass, RecoveryRecipe } from '../plan/schema.ts';
import { FAILURE_CLASSES } from '../plan/schema.ts';
import { ERROR_NAMES } from '../runtime/payloads/index.ts';
import { type AslRetrier, INTERRUPTED_ERROR, LAMBDA_SERVICE_ERRORS } from './asl.ts';

export interface RetryPolicyProps {
  /** The plan's effective recipes (seed 000's defaults with the plan's overrides). */
  readonly recovery: Readonly<Record<FailureClass, RecoveryRecipe>>;
  /**
   * Also retry the Lambda service's own transient errors (throttling, service exceptions).
   * @default true
   */
  readonly includeLambdaServiceErrors?: boolean;
}

export class RetryPolicy {
  constructor(private readonly props: RetryPolicyProps) {}

  /** The recipes it retries by (the step's effective recovery). */
  get recovery(): RetryPolicyProps['recovery'] {
    return this.props.recovery;
  }

  toAsl(): AslRetrier[] {
    const retriers: AslRetrier[] = [];
    for (const failureClass of FAILURE_CLASSES) {
      const recipe = this.props.recovery[failureClass];
      if (recipe.maxAttempts > 0) retriers.push(retrier([ERROR_NAMES[failureClass]], recipe));
    }
    if (this.props.includeLambdaServiceErrors ?? true) {
      const transient = this.props.recovery.transient;
      retriers.push(
        transient.maxAttempts > 0
          ? retrier(LAMBDA_SERVICE_ERRORS, transient)
          : { ErrorEquals: LAMBDA_SERVICE_ERRORS },
      );
    }
    return retriers;
  }

  /**
   * An attempt the engine's stop cut short, retried as the transient recipe retries an
   * interrupted step (for work that decides on its own whether to run again: the rollbacks).
   */
  interrupted(): AslRetrier[] {
    const transient = this.props.recovery.transient;
    return transient.maxAttempts > 0 ? [retrier([INTERRUPTED_ERROR], transient)] : [];
  }
}

/** ASL's defaults, which a retrier leaves out (every step's blocks are repeated per step). */
const ASL_RETRY_DEFAULTS = { IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2 } as const;

function retrier(errors: string[], recipe: RecoveryRecipe): AslRetrier {
  // ASL requires a positive interval; a recipe's 0 means "as soon as possible".
  const intervalSeconds = Math.max(1, recipe.intervalSeconds);
  return {
    ErrorEquals: errors,
    ...(intervalSeconds !== ASL_RETRY_DEFAULTS.IntervalSeconds ? { IntervalSeconds: intervalSeconds } : {}),
    ...(recipe.maxAttempts !== ASL_RETRY_DEFAULTS.MaxAttempts ? { MaxAttempts: recipe.maxAttempts } : {}),
    ...(recipe.backoffRate !== ASL_RETRY_DEFAULTS.BackoffRate ? { BackoffRate: recipe.backoffRate } : {}),
    MaxDelaySeconds: recipe.maxDelaySeconds,
  };
}
