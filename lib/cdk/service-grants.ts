/**
 * Permissions Step Functions needs on a state machine's own role for logging and tracing.
 * Both services document these actions as supporting only `Resource: *`.
 */
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';

/** CloudWatch Logs vended-log delivery (what `loggingConfiguration` needs). */
export function grantStateMachineLogging(grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: [
        'logs:CreateLogDelivery',
        'logs:GetLogDelivery',
        'logs:UpdateLogDelivery',
        'logs:DeleteLogDelivery',
        'logs:ListLogDeliveries',
        'logs:PutResourcePolicy',
        'logs:DescribeResourcePolicies',
        'logs:DescribeLogGroups',
      ],
      resources: ['*'],
    }),
  );
}

/** X-Ray segments and sampling (what `tracingConfiguration.enabled` needs). */
export function grantXRayTracing(grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: [
        'xray:PutTraceSegments',
        'xray:PutTelemetryRecords',
        'xray:GetSamplingRules',
        'xray:GetSamplingTargets',
      ],
      resources: ['*'],
    }),
  );
}
