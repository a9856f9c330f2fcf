#!/usr/bin/env -S npx tsx
/**
 * The CDK app (`npx cdk synth`, `npx cdk deploy`): the plangate platform and every example plan
 * in examples/ as a state machine on it, checked by cdk-nag's AwsSolutions rules.
 * An example that does not validate fails synth with its located problems; none is skipped.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadExamplePlans } from '../lib/cdk/examples.ts';
import { PlanPlatformStack } from '../lib/cdk/plan-platform-stack.ts';

const app = new App();
const stack = new PlanPlatformStack(app, app.node.tryGetContext('plangate:stackName') ?? 'Plangate', {
  description:
    'plangate: plan-execution harness (tables, bus, harness Lambdas, Plans API) and the example plans',
  platform: {
    ...(app.node.tryGetContext('plangate:sesSender')
      ? { sesSender: app.node.tryGetContext('plangate:sesSender') }
      : {}),
  },
});
for (const plan of await loadExamplePlans()) stack.addPlan(plan);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
