/**
 * cdk-nag acknowledgements that name one exact finding. IAM5 findings carry the flattened
 * resource (`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:…:stateMachine:plangate-*]`),
 * so a wildcard is acknowledged only for the ARN pattern it was written for, never the rule at large.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

/** Acknowledges the IAM5 wildcard finding for `resourceArn` (as written in a policy) on `scope`. */
export function acknowledgeWildcardResource(scope: IConstruct, resourceArn: string, reason: string): void {
  const flat = flattenCfnReference(Stack.of(scope).resolve(resourceArn));
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flat}]`, reason });
}
