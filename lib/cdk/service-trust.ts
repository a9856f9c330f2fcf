/**
 * The trust of a role a service assumes (Lambda, Step Functions, EventBridge, …), with the
 * confused-deputy conditions: the service may assume it only on behalf of this stack's account
 * (`aws:SourceAccount`) and, where the resources it acts for are named by the platform, only for
 * those (`aws:SourceArn`, ArnLike). tests/cdk/operable.test.ts refuses a template with a service
 * trust that lacks the account condition.
 */
import { Stack } from 'aws-cdk-lib';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';

/**
 * `service` (e.g. `states.amazonaws.com`) as a trusted principal, for this stack's account only
 * and, with `sourceArns`, only for resources matching one of them.
 */
export function trustedService(
  scope: IConstruct,
  service: string,
  sourceArns: readonly string[] = [],
): ServicePrincipal {
  return new ServicePrincipal(service, {
    conditions: {
      StringEquals: { 'aws:SourceAccount': Stack.of(scope).account },
      ...(sourceArns.length > 0 ? { ArnLike: { 'aws:SourceArn': [...sourceArns] } } : {}),
    },
  });
}
