/**
 * The plangate CDK app's contents: the platform stack with every example plan on it, checked by
 * cdk-nag's AwsSolutions rules. bin/cdk.ts runs it; tests build the same app.
 */
import { type App, Validations } from 'aws-cdk-lib';
import { defaultPolicyDir, PolicyLoadError, PolicySet } from '../policy/policy-set.ts';
import { loadExamplePlans } from './examples.ts';
import { PlanPlatformStack } from './plan-platform-stack.ts';

/** Context keys `cdk synth -c key=value` accepts. */
export const APP_CONTEXT = {
  /** Stack name. @default 'Plangate' */
  stackName: 'plangate:stackName',
  /** The SES identity approval emails are sent from. @default - no email */
  sesSender: 'plangate:sesSender',
  /** State machine name prefix. @default 'plangate' */
  namePrefix: 'plangate:namePrefix',
  /** The Bedrock model (or inference profile) id that drafts plans from goals. @default - no planner */
  plannerModel: 'plangate:plannerModel',
  /** The platform's Cedar policy directory (docs/policy.md). @default the shipped set, policies/default */
  policyDir: 'plangate:policyDir',
} as const;

/**
 * Without `-c plangate:sesSender=…` the app's platform emails nobody (it has no Slack app), and
 * says so: a platform that can reach no approver synthesizes only with the reason.
 */
export const APP_UNNOTIFIED_REASON =
  'the plangate example app without -c plangate:sesSender: approvers follow GET /plans/{id} and open its approval link';

/**
 * Adds the platform stack and one `PlanStateMachine` per example plan to `app`, and the
 * AwsSolutions checks (so it needs cdk-nag, an optional peer of the package, installed). Rejects,
 * listing every located problem, if an example does not validate or the policy directory does not load.
 */
export async function buildPlangateApp(app: App, examplesDir?: string): Promise<PlanPlatformStack> {
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const sesSender = context(APP_CONTEXT.sesSender);
  const namePrefix = context(APP_CONTEXT.namePrefix);
  const plannerModel = context(APP_CONTEXT.plannerModel);
  const policyDir = context(APP_CONTEXT.policyDir);
  // Policies that do not load would refuse every decision: the synth fails first, every problem located.
  const policies = await PolicySet.check(policyDir ?? defaultPolicyDir());
  if (policies.problems.some((p) => p.severity === 'error'))
    throw new PolicyLoadError(policies.dir, policies.problems);
  const stack = new PlanPlatformStack(app, context(APP_CONTEXT.stackName) ?? 'Plangate', {
    description:
      'plangate: plan-execution harness (tables, bus, harness Lambdas, Plans API) and the example plans',
    platform: {
      ...(sesSender ? { sesSender } : { unnotifiedGatesAcknowledged: APP_UNNOTIFIED_REASON }),
      namePrefix,
      planner: plannerModel ? { model: plannerModel } : undefined,
      policyDir,
    },
  });
  for (const plan of await loadExamplePlans(examplesDir)) stack.addPlan(plan);
  // Loaded here, not with the module: cdk-nag is an optional peer of the constructs (lib/cdk/index.ts).
  const { AwsSolutionsChecks } = await import('cdk-nag');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return stack;
}
