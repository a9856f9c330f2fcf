/**
 * cdk-nag acknowledgements that name one exact finding. IAM5 findings carry the flattened
 * resource (`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:…:stateMachine:plangate-*]`),
 * so a wildcard is acknowledged only for the ARN pattern it was written for, never the rule at large.
 *
 * cdk-nag is an optional peer dependency: an app that runs its checks has it installed; without it
 * no finding exists to acknowledge, and the constructs synthesize the same resources.
 */
import { createRequire } from 'node:module';
import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

type Flatten = (reference: unknown) => string;

/** cdk-nag's own flattening (so an acknowledgement names the finding exactly), when it is installed. */
const flattenCfnReference = ((): Flatten | undefined => {
  try {
    return (
      createRequire(import.meta.url)('cdk-nag/lib/utils/flatten-cfn-reference.js') as {
        flattenCfnReference: Flatten;
      }
    ).flattenCfnReference;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
})();

/** Acknowledges the IAM5 wildcard finding for `resourceArn` (as written in a policy) on `scope`. */
export function acknowledgeWildcardResource(scope: IConstruct, resourceArn: string, reason: string): void {
  if (!flattenCfnReference) return;
  const flat = flattenCfnReference(Stack.of(scope).resolve(resourceArn));
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flat}]`, reason });
}
