/** Shared settings for CDK unit tests: no bundling (no esbuild runs), no CloudFormation linting. */
import { App } from 'aws-cdk-lib';

/** An App that skips asset bundling and the built-in template rules, so unit tests stay fast. */
export function testApp(context: Record<string, unknown> = {}): App {
  return new App({
    context: {
      'aws:cdk:bundling-stacks': [],
      '@aws-cdk/core:validateAgainstDefaultRules': false,
      ...context,
    },
  });
}

/** `{ "Fn::GetAtt": [<logical id>, "Arn"] }`, as the template refers to a resource's ARN. */
export function arnOf(logicalId: string): unknown {
  return { 'Fn::GetAtt': [logicalId, 'Arn'] };
}

/** A platform of a unit test tells no approver of its gates, and says so (PlanPlatform refuses it otherwise). */
export const UNNOTIFIED = { unnotifiedGatesAcknowledged: 'a unit test: no approver is told' } as const;
