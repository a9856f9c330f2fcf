/**
 * The platform as an operator runs it (issue 32, "Operable"), on the app's synthesized template:
 * every role a service assumes is held to this account (and to the platform's own resources where
 * they are named).
 */
import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildPlangateApp } from '../../lib/cdk/app.ts';
import type { PlanPlatformStack } from '../../lib/cdk/plan-platform-stack.ts';

interface Resource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}
interface TrustStatement {
  readonly Effect: string;
  readonly Principal?: { readonly Service?: string | string[]; readonly AWS?: unknown };
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const ACCOUNT = '111111111111';
const REGION = 'eu-west-1';

let stack: PlanPlatformStack;
let resources: Record<string, Resource>;

beforeAll(async () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  stack = await buildPlangateApp(app);
  resources = app.synth().getStackByName(stack.stackName).template.Resources;
}, 120_000);

/** A template value as text: pseudo parameters resolved to this test's account and region, other references named. */
function text(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if ('Ref' in v) {
    const pseudo: Record<string, string> = {
      'AWS::Partition': 'aws',
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    return pseudo[String(v.Ref)] ?? `<${String(v.Ref)}>`;
  }
  if ('Fn::GetAtt' in v) return `<${(v['Fn::GetAtt'] as string[]).join('.')}>`;
  if ('Fn::Join' in v) {
    const [sep, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map(text).join(sep);
  }
  throw new Error(`not a value this test reads: ${JSON.stringify(value)}`);
}

const ofType = (type: string): [string, Resource][] =>
  Object.entries(resources).filter(([, r]) => r.Type === type);

describe('trust', () => {
  /** Every statement of every role's trust policy that names a service principal. */
  const serviceTrusts = (): { role: string; services: string[]; statement: TrustStatement }[] =>
    ofType('AWS::IAM::Role').flatMap(([role, r]) =>
      (r.Properties.AssumeRolePolicyDocument as { Statement: TrustStatement[] }).Statement.filter(
        (st) => st.Principal?.Service !== undefined,
      ).map((statement) => ({ role, services: [statement.Principal?.Service ?? []].flat(), statement })),
    );

  it("holds every role a service assumes to this stack's account (aws:SourceAccount)", () => {
    const trusts = serviceTrusts();
    // Every harness function, the run-time plan role and every plan machine's role.
    expect(trusts.length).toBeGreaterThanOrEqual(12);
    const missing = trusts
      .filter(
        ({ statement }) =>
          statement.Effect === 'Allow' &&
          text(statement.Condition?.StringEquals?.['aws:SourceAccount'] ?? '') !== ACCOUNT,
      )
      .map(({ role, services }) => `${role} (${services.join(', ')})`);
    expect(missing, 'service trusts without aws:SourceAccount').toEqual([]);
  });

  it("holds Step Functions to the platform's own machines (aws:SourceArn), the run-time plan role to the run-time ones", () => {
    const states = serviceTrusts().filter(({ services }) => services.includes('states.amazonaws.com'));
    expect(states.length).toBeGreaterThanOrEqual(2);
    const prefix = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${stack.platform.namePrefix}-`;
    for (const { role, statement } of states) {
      const arns = [statement.Condition?.ArnLike?.['aws:SourceArn'] ?? []].flat().map(text);
      expect(arns.length, role).toBeGreaterThan(0);
      for (const arn of arns) expect(arn.startsWith(prefix), `${role}: ${arn}`).toBe(true);
    }
    const runtimeRole = stack.getLogicalId(stack.platform.runtimePlanRole.node.defaultChild as never);
    const runtime = states.find(({ role }) => role === runtimeRole);
    expect(runtime?.statement.Condition?.StringEquals?.['aws:SourceAccount']).toEqual({
      Ref: 'AWS::AccountId',
    });
    expect([runtime?.statement.Condition?.ArnLike?.['aws:SourceArn']].flat().map(text)).toEqual([
      `${prefix}run-*`,
    ]);
  });
});
