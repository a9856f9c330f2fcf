/** The template reader refuses what it cannot resolve, naming the resource, rather than guess. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSimulatedTemplate, SIM_ACCOUNT } from './template.ts';

function templateDir(resources: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'plangate-iam-template-'));
  writeFileSync(join(dir, 'S.template.json'), JSON.stringify({ Resources: resources }));
  return dir;
}

const role = { Type: 'AWS::IAM::Role', Properties: {} };
const table = { Type: 'AWS::DynamoDB::Table', Properties: {} };
const queue = { Type: 'AWS::SQS::Queue', Properties: {} };
const policy = (resource: unknown, extra: Record<string, unknown> = {}) => ({
  Type: 'AWS::IAM::Policy',
  Properties: {
    Roles: [{ Ref: 'R' }],
    PolicyDocument: {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: resource, ...extra }],
    },
  },
});

describe('the simulated template', () => {
  it("resolves Ref, Fn::GetAtt, Fn::Join and Fn::Sub to the simulated account's ARNs", () => {
    const t = readSimulatedTemplate(
      templateDir({
        R: role,
        T: table,
        P: policy([
          { 'Fn::GetAtt': ['T', 'Arn'] },
          {
            'Fn::Join': [
              '',
              [
                'arn:',
                { Ref: 'AWS::Partition' },
                ':dynamodb:',
                { Ref: 'AWS::Region' },
                ':',
                { Ref: 'AWS::AccountId' },
                ':table/',
                { Ref: 'T' },
                '/index/*',
              ],
            ],
          },
          { 'Fn::Sub': 'arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${T}' },
        ]),
      }),
      'S',
    );
    const [p] = t.rolePolicies.get(t.arnOf('R')) ?? [];
    const arn = `arn:aws:dynamodb:us-east-1:${SIM_ACCOUNT}:table/S-T`;
    expect(p?.document.Statement[0]?.Resource).toEqual([arn, `${arn}/index/*`, arn]);
  });

  it("gives a queue (a function's dead-letter queue) its ARN", () => {
    const t = readSimulatedTemplate(
      templateDir({ R: role, Q: queue, P: policy({ 'Fn::GetAtt': ['Q', 'Arn'] }) }),
      'S',
    );
    const [p] = t.rolePolicies.get(t.arnOf('R')) ?? [];
    expect(p?.document.Statement[0]?.Resource).toEqual([`arn:aws:sqs:us-east-1:${SIM_ACCOUNT}:S-Q`]);
  });

  it("reads each role's trust policy, on the role itself", () => {
    const t = readSimulatedTemplate(
      templateDir({
        R: role,
        Q: {
          Type: 'AWS::IAM::Role',
          Properties: {
            AssumeRolePolicyDocument: {
              Version: '2012-10-17',
              Statement: [
                {
                  Effect: 'Allow',
                  Action: 'sts:AssumeRole',
                  Principal: { AWS: { 'Fn::GetAtt': ['R', 'Arn'] } },
                },
              ],
            },
          },
        },
      }),
      'S',
    );
    expect(t.trustPolicies.get(t.arnOf('Q'))?.document.Statement).toEqual([
      {
        Effect: 'Allow',
        Action: ['sts:AssumeRole'],
        Principal: { AWS: [t.arnOf('R')] },
        Resource: [t.arnOf('Q')],
      },
    ]);
    expect(t.trustPolicies.has(t.arnOf('R'))).toBe(false);
  });

  it('refuses an intrinsic, a managed policy or a field it would not evaluate, naming where', () => {
    expect(() =>
      readSimulatedTemplate(templateDir({ R: role, P: policy({ 'Fn::ImportValue': 'x' }) }), 'S'),
    ).toThrow(/Resources\/P\/PolicyDocument.*Fn::ImportValue is not an intrinsic/);
    expect(() =>
      readSimulatedTemplate(
        templateDir({
          R: { Type: 'AWS::IAM::Role', Properties: { ManagedPolicyArns: ['arn:aws:iam::aws:policy/Admin'] } },
        }),
        'S',
      ),
    ).toThrow(/Resources\/R: managed policies/);
    expect(() =>
      readSimulatedTemplate(templateDir({ R: role, P: policy('*', { NotPrincipal: { AWS: '*' } }) }), 'S'),
    ).toThrow(/Resources\/P\/PolicyDocument: not a policy document the simulator evaluates/);
  });
});
