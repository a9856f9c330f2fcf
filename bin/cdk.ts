#!/usr/bin/env -S npx tsx
/**
 * The CDK app (`npx cdk synth`, `npx cdk deploy`): the plangate platform and every example plan
 * in examples/ as a state machine on it, checked by cdk-nag's AwsSolutions rules. An example that
 * does not validate fails synth with its located problems; none is skipped.
 */
import { App } from 'aws-cdk-lib';
import { buildPlangateApp } from '../lib/cdk/app.ts';

const app = new App();
await buildPlangateApp(app);
app.synth();
