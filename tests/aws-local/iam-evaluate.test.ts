/** The IAM simulator's evaluation: wildcards, condition operators, explicit Deny first, fail closed. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { conditionsHold, UnknownConditionOperatorError } from '../../lib/aws-local/iam/conditions.ts';
import { evaluate, type PolicySet } from '../../lib/aws-local/iam/evaluate.ts';
import { PolicyDocumentSchema } from '../../lib/aws-local/iam/policy-document.ts';
import { matchesWildcard } from '../../lib/aws-local/iam/wildcard.ts';

/** The reference: the pattern as an anchored regular expression. */
const asRegExp = (pattern: string) =>
  new RegExp(
    `^${[...pattern].map((c) => (c === '*' ? '[\\s\\S]*' : c === '?' ? '[\\s\\S]' : c.replace(/[.+^${}()|[\]\\/-]/g, '\\$&'))).join('')}$`,
  );
const text = fc.string({ unit: fc.constantFrom('a', 'b', ':', '/', '-', '*', '?'), maxLength: 12 });
const literal = fc.string({ unit: fc.constantFrom('a', 'b', ':', '/', '-'), maxLength: 12 });

describe('IAM wildcards', () => {
  it('agree with the regular expression of the pattern', () => {
    fc.assert(fc.property(text, literal, (p, v) => matchesWildcard(p, v) === asRegExp(p).test(v)));
  });

  it('match a value with any part of it replaced by `*` or any one character by `?`', () => {
    fc.assert(
      fc.property(literal, fc.nat(), fc.nat(), (v, a, b) => {
        const i = a % (v.length + 1);
        const j = i + (b % (v.length - i + 1));
        expect(matchesWildcard(`${v.slice(0, i)}*${v.slice(j)}`, v)).toBe(true);
        if (v.length > 0)
          expect(matchesWildcard(`${v.slice(0, i % v.length)}?${v.slice((i % v.length) + 1)}`, v)).toBe(true);
      }),
    );
  });

  it('without wildcards match only the value itself; actions without case, ARNs with it', () => {
    fc.assert(fc.property(literal, literal, (p, v) => matchesWildcard(p, v) === (p === v)));
    expect(matchesWildcard('DynamoDB:putitem', 'dynamodb:PutItem', { ignoreCase: true })).toBe(true);
    expect(
      matchesWildcard(
        'arn:aws:secretsmanager:*:secret:Plangate/*',
        'arn:aws:secretsmanager:r:secret:plangate/x',
      ),
    ).toBe(false);
    expect(matchesWildcard('dynamodb:*', 'dynamodb:')).toBe(true);
    expect(matchesWildcard('dynamodb:Get?tem', 'dynamodb:GetItem')).toBe(true);
    expect(matchesWildcard('dynamodb:Get?tem', 'dynamodb:Gettem')).toBe(false);
  });
});

describe('IAM condition operators', () => {
  const role = 'arn:aws:iam::123456789012:role/Writer';
  it('ArnNotEquals holds for a principal the list does not name, and for a missing key', () => {
    const block = { ArnNotEquals: { 'aws:PrincipalArn': [role] } };
    expect(conditionsHold(block, { 'aws:PrincipalArn': role })).toBe(false);
    expect(conditionsHold(block, { 'aws:PrincipalArn': 'arn:aws:iam::123456789012:role/Other' })).toBe(true);
    expect(conditionsHold(block, {})).toBe(true);
  });

  it('positive operators fail on a missing key unless IfExists; keys compare without case', () => {
    expect(conditionsHold({ StringEquals: { 'aws:x': ['a'] } }, {})).toBe(false);
    expect(conditionsHold({ StringEqualsIfExists: { 'aws:x': ['a'] } }, {})).toBe(true);
    expect(conditionsHold({ StringEquals: { 'AWS:X': ['a', 'b'] } }, { 'aws:x': 'b' })).toBe(true);
    expect(
      conditionsHold(
        { ArnLike: { 'aws:SourceArn': ['arn:aws:states:*:execution:p-*'] } },
        { 'aws:SourceArn': 'arn:aws:states:r:execution:p-1' },
      ),
    ).toBe(true);
    expect(
      conditionsHold({ Bool: { 'aws:SecureTransport': ['false'] } }, { 'aws:SecureTransport': 'false' }),
    ).toBe(true);
    expect(conditionsHold({ Null: { 'aws:x': ['true'] } }, {})).toBe(true);
  });

  it('every operator and key must hold', () => {
    const block = { StringEquals: { a: ['1'], b: ['2'] }, StringLike: { c: ['x*'] } };
    expect(conditionsHold(block, { a: '1', b: '2', c: 'xy' })).toBe(true);
    expect(conditionsHold(block, { a: '1', b: '3', c: 'xy' })).toBe(false);
    expect(conditionsHold(block, { a: '1', b: '2', c: 'yx' })).toBe(false);
  });

  it('an operator it does not implement is an error, not a guess', () => {
    expect(() => conditionsHold({ NumericLessThan: { n: ['3'] } }, { n: '1' })).toThrow(
      UnknownConditionOperatorError,
    );
    expect(() => conditionsHold({ 'ForAnyValue:StringEquals': { n: ['3'] } }, {})).toThrow(/not implemented/);
  });
});

describe('IAM policy evaluation', () => {
  const principalArn = 'arn:aws:iam::123456789012:role/StepRunner';
  const table = 'arn:aws:dynamodb:us-east-1:123456789012:table/events';
  const doc = (statements: unknown[]) =>
    PolicyDocumentSchema.parse({ Version: '2012-10-17', Statement: statements });
  const identity = (statements: unknown[]): PolicySet => ({
    identity: [{ name: 'role policy', document: doc(statements) }],
  });
  const ask = (action: string, policies: PolicySet, resource = table) =>
    evaluate({ principalArn, action, resource }, policies);

  it('denies what nothing allows, allows what a statement allows, and an explicit Deny wins', () => {
    const policies = identity([
      { Effect: 'Allow', Action: 'dynamodb:*', Resource: table },
      { Sid: 'NoUpdates', Effect: 'Deny', Action: ['dynamodb:UpdateItem'], Resource: table },
    ]);
    expect(ask('dynamodb:GetItem', policies)).toMatchObject({ effect: 'allow' });
    expect(ask('dynamodb:UpdateItem', policies)).toEqual({
      effect: 'deny',
      reason: 'explicit',
      by: 'role policy statement NoUpdates',
    });
    expect(ask('dynamodb:GetItem', policies, `${table}-other`)).toEqual({
      effect: 'deny',
      reason: 'implicit',
    });
    expect(ask('events:PutEvents', { identity: [] })).toEqual({ effect: 'deny', reason: 'implicit' });
  });

  it("a role session's policy narrows what the role may do: both must allow, and either's Deny wins", () => {
    const role = identity([{ Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' }]);
    const session = (statements: unknown[]) => ({
      name: 'session policy of run-1',
      document: doc(statements),
    });
    const within = (action: string, sessionPolicy: ReturnType<typeof session>, resource = table) =>
      evaluate({ principalArn, action, resource, sessionPolicy }, role);
    const reads = session([
      { Effect: 'Allow', Action: ['dynamodb:GetItem', 'secretsmanager:GetSecretValue'], Resource: '*' },
      { Sid: 'NotThatOne', Effect: 'Deny', Action: '*', Resource: `${table}-secret` },
    ]);
    expect(within('dynamodb:GetItem', reads)).toEqual({
      effect: 'allow',
      by: 'role policy statement #0, within session policy of run-1 statement #0',
    });
    expect(within('dynamodb:PutItem', reads)).toEqual({
      effect: 'deny',
      reason: 'session',
      by: 'session policy of run-1',
    });
    // What the session policy allows and the role does not stays denied.
    expect(within('secretsmanager:GetSecretValue', reads, 'arn:aws:secretsmanager:r:a:secret:x')).toEqual({
      effect: 'deny',
      reason: 'implicit',
    });
    expect(within('dynamodb:GetItem', reads, `${table}-secret`)).toMatchObject({
      effect: 'deny',
      reason: 'explicit',
      by: 'session policy of run-1 statement NotThatOne',
    });
  });

  it('NotAction and NotResource cover everything else', () => {
    const policies = identity([
      { Effect: 'Allow', NotAction: 'dynamodb:Delete*', NotResource: `${table}/index/*` },
    ]);
    expect(ask('dynamodb:PutItem', policies)).toMatchObject({ effect: 'allow' });
    expect(ask('dynamodb:DeleteItem', policies)).toMatchObject({ effect: 'deny' });
    expect(ask('dynamodb:Query', policies, `${table}/index/byPlan`)).toMatchObject({ effect: 'deny' });
  });

  it("a resource policy's Deny applies to the principals it names, with its conditions", () => {
    const policies: PolicySet = {
      identity: [
        {
          name: 'role policy',
          document: doc([{ Effect: 'Allow', Action: 'dynamodb:PutItem', Resource: table }]),
        },
      ],
      resource: {
        name: 'table policy',
        document: doc([
          {
            Sid: 'OnlyWriters',
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 'dynamodb:PutItem',
            Resource: '*',
            Condition: { ArnNotEquals: { 'aws:PrincipalArn': ['arn:aws:iam::123456789012:role/Gate'] } },
          },
        ]),
      },
    };
    expect(ask('dynamodb:PutItem', policies)).toEqual({
      effect: 'deny',
      reason: 'explicit',
      by: 'table policy statement OnlyWriters',
    });
    expect(
      evaluate(
        { principalArn: 'arn:aws:iam::123456789012:role/Gate', action: 'dynamodb:PutItem', resource: table },
        policies,
      ),
    ).toMatchObject({ effect: 'allow', by: 'role policy statement #0' });
  });

  it('a statement it cannot evaluate denies the request and names the operator, even in an Allow', () => {
    const policies = identity([
      { Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' },
      {
        Effect: 'Allow',
        Action: 'dynamodb:PutItem',
        Resource: '*',
        Condition: { DateLessThan: { 'aws:CurrentTime': '2030-01-01' } },
      },
    ]);
    const decision = ask('dynamodb:PutItem', policies);
    expect(decision).toMatchObject({ effect: 'deny', reason: 'unevaluable' });
    expect(JSON.stringify(decision)).toContain('DateLessThan');
    // A statement that does not cover the request does not matter.
    expect(ask('dynamodb:GetItem', policies)).toMatchObject({ effect: 'allow' });
  });

  it('a policy document with a field it does not evaluate is refused', () => {
    expect(() => doc([{ Effect: 'Deny', NotPrincipal: { AWS: '*' }, Action: '*', Resource: '*' }])).toThrow();
    expect(() => doc([{ Effect: 'Allow', Action: '*' }])).toThrow(/Resource/);
  });
});
