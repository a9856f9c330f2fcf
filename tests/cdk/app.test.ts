/**
 * The CDK app as `npx cdk synth` builds it: platform + every example plan, cdk-nag AwsSolutions
 * and CloudFormation's own rules with nothing unacknowledged; and the real CLI, offline.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { buildPlangateApp } from '../../lib/cdk/app.ts';
import { EXAMPLES_DIR, PROJECT_ROOT } from '../../lib/cdk/paths.ts';
import { HARNESS_HANDLERS } from '../../lib/runtime/catalog.ts';
import { sharedCdkOut } from '../support/cdk-synth.ts';

interface ValidationReport {
  pluginReports: { pluginName: string; violations: { ruleName: string; severity?: string }[] }[];
}

function unacknowledged(outdir: string): string[] {
  const file = join(outdir, 'validation-report.json');
  if (!existsSync(file)) return [];
  const report = JSON.parse(readFileSync(file, 'utf8')) as ValidationReport;
  return report.pluginReports.flatMap((plugin) =>
    plugin.violations.map((v) => `${plugin.pluginName}: ${v.ruleName}`),
  );
}

describe('the CDK app', () => {
  it('has zero unacknowledged cdk-nag AwsSolutions or CloudFormation findings, errors or warnings', async () => {
    const outdir = mkdtempSync(join(tmpdir(), 'plangate-synth-'));
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    await buildPlangateApp(app);
    app.synth(); // throws when a validation plugin reports an error
    expect(unacknowledged(outdir)).toEqual([]);
    const findings = new AwsSolutionsChecks().validateScope(app).violations;
    expect(
      findings.map((v) => `${v.severity} ${v.ruleName} ${v.violatingResources[0]?.constructPath}`),
    ).toEqual([]);
  });

  it('fails when an example plan does not validate, with every located problem', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plangate-examples-'));
    copyFileSync(join(EXAMPLES_DIR, 'release-api.json'), join(dir, 'release-api.json'));
    copyFileSync(join(PROJECT_ROOT, 'tests/fixtures/invalid/dependency-cycle.yaml'), join(dir, 'cycle.yaml'));
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    await expect(buildPlangateApp(app, dir)).rejects.toThrow(/cycle\.yaml:\d+:\d+ error dependency-cycle/);
  });

  it('synthesizes with `npx cdk synth`: offline, no credentials, no Docker, ESM bundles with the SDK inside', async () => {
    const { dir: outdir, synthMs } = await sharedCdkOut();
    expect(synthMs).toBeLessThan(170_000);
    const template = JSON.parse(readFileSync(join(outdir, 'Plangate.template.json'), 'utf8')) as {
      Resources: Record<
        string,
        { Type: string; Properties?: { Description?: string; Code?: { S3Key?: unknown } } }
      >;
    };
    const machines = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::StepFunctions::StateMachine',
    );
    // Every compiled definition of every example (its plan machine, its step machines).
    expect(machines.length).toBe(
      readdirSync(join(PROJECT_ROOT, 'statemachines')).filter((f) => f.endsWith('.asl.json')).length,
    );
    const bundles = readdirSync(outdir)
      .filter((d) => d.startsWith('asset.'))
      .map((d) => join(outdir, d, 'index.mjs'))
      .filter(existsSync);
    expect(bundles.length).toBeGreaterThanOrEqual(5);
    // The plan-process function calls no AWS API (the harness hands it a step's credentials).
    const sdkFree = Object.values(template.Resources)
      .filter(
        (r) =>
          r.Type === 'AWS::Lambda::Function' &&
          r.Properties?.Description === HARNESS_HANDLERS.planProcess.description,
      )
      .map((r) => `asset.${String(r.Properties?.Code?.S3Key).replace(/\.zip$/, '')}`);
    expect(sdkFree).toHaveLength(1);
    for (const bundle of bundles) {
      const code = readFileSync(bundle, 'utf8');
      expect(code.startsWith("import { createRequire } from 'node:module';"), `${bundle} is ESM`).toBe(true);
      // The SDK is inside (its SigV4 auth scheme id is in every client), never imported from outside.
      const callsAws = !sdkFree.some((dir) => bundle.includes(`/${dir}/`));
      expect(code.includes('aws.auth#sigv4'), `${bundle} bundles the AWS SDK`).toBe(callsAws);
      expect(/\bfrom\s*["']@aws-sdk\//.test(code), `${bundle} imports @aws-sdk from outside`).toBe(false);
    }
    expect(unacknowledged(outdir)).toEqual([]);
  }, 250_000);

  it('ships source maps for stack traces, without the sources in them', async () => {
    const { dir: outdir } = await sharedCdkOut();
    const maps = readdirSync(outdir)
      .filter((d) => d.startsWith('asset.'))
      .flatMap((d) =>
        readdirSync(join(outdir, d))
          .filter((f) => f.endsWith('.map'))
          .map((f) => join(outdir, d, f)),
      );
    expect(maps.length).toBeGreaterThanOrEqual(5);
    for (const file of maps) {
      const map = JSON.parse(readFileSync(file, 'utf8')) as { sources?: string[]; sourcesContent?: unknown };
      expect(map.sources?.length, `${file} maps to its sources`).toBeGreaterThan(0);
      expect(map.sourcesContent, `${file} carries the sources`).toBeUndefined();
    }
  }, 250_000);
});
