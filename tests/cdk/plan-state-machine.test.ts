/** Plans compiled at synth time: the definition in the template is the compiler's, byte for byte. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { LogLevel } from 'aws-cdk-lib/aws-stepfunctions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadExamplePlans } from '../../lib/cdk/examples.ts';
import { PROJECT_ROOT } from '../../lib/cdk/paths.ts';
import { PlanPlatformStack } from '../../lib/cdk/plan-platform-stack.ts';
import { PlanStateMachine } from '../../lib/cdk/plan-state-machine.ts';
import { agentActivityPlaceholder, compilePlan, PLACEHOLDERS } from '../../lib/compiler/index.ts';
import { placeholdersIn, workerTargets } from '../../lib/launch/deploy-plan.ts';
import { planDigest } from '../../lib/plan/digest.ts';
import { parsePlanBytes } from '../../lib/plan/parse.ts';
import type { Plan } from '../../lib/plan/schema.ts';
import { testApp, UNNOTIFIED } from './support.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

let plans: Plan[];
let stack: PlanPlatformStack;
let template: Template;

beforeAll(async () => {
  plans = await loadExamplePlans();
  stack = new PlanPlatformStack(testApp(), 'Plans', { platform: UNNOTIFIED });
  for (const plan of plans) stack.addPlan(plan);
  template = Template.fromStack(stack);
});

function resourceOf(construct: { node: { defaultChild?: unknown } }, t = template, s = stack): Resource {
  return t.toJSON().Resources[s.getLogicalId(construct.node.defaultChild as never)] as Resource;
}

function statementsOf(machine: PlanStateMachine['stateMachine'], t = template, s = stack): Statement[] {
  const role = { Ref: s.getLogicalId(machine.role.node.defaultChild as never) };
  return (Object.values(t.findResources('AWS::IAM::Policy')) as Resource[])
    .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const HANDLER_OF: Record<string, 'gate' | 'stepRunner' | 'contractChecker' | 'classifier' | 'join'> = {
  [PLACEHOLDERS.gate]: 'gate',
  [PLACEHOLDERS.stepRunner]: 'stepRunner',
  [PLACEHOLDERS.contractChecker]: 'contractChecker',
  [PLACEHOLDERS.classifier]: 'classifier',
  [PLACEHOLDERS.join]: 'join',
};

describe('example plans', () => {
  it('are all deployed, each as plangate-<planId>', () => {
    expect(plans.length).toBeGreaterThanOrEqual(5);
    const names = (
      Object.values(template.findResources('AWS::StepFunctions::StateMachine')) as Resource[]
    ).map((r) => r.Properties.StateMachineName);
    // Each plan's machine, and beside it its step machines.
    expect(names.sort()).toEqual(
      plans.flatMap((p) => compilePlan(p).definitions.map((d) => `plangate-${d.name}`)).sort(),
    );
    expect(names).toEqual(expect.arrayContaining(plans.map((p) => `plangate-${p.id}`)));
  });

  it("keep the compiler's definition verbatim, every placeholder mapped to the platform's function or agent activity", () => {
    for (const plan of plans) {
      const machine = stack.plans.get(plan.id)!;
      const resource = resourceOf(machine.stateMachine);
      const compiled = compilePlan(plan).definitions[0]!.json;
      expect(resource.Properties.DefinitionString).toBe(compiled);
      const substitutions = resource.Properties.DefinitionSubstitutions as Record<string, unknown>;
      expect(Object.keys(substitutions).sort()).toEqual(placeholdersIn(compiled).sort());
      for (const [placeholder, value] of Object.entries(substitutions)) {
        const target = workerTargets(plan).find((t) => agentActivityPlaceholder(t) === placeholder);
        if (target !== undefined) {
          const activity = stack.platform.agentActivity(target);
          expect(value).toEqual({ Ref: stack.getLogicalId(activity.node.defaultChild as never) });
          continue;
        }
        const children = compilePlan(plan).definitions.slice(1);
        const part = children.findIndex((d) => d.arnSubstitution === placeholder);
        if (part >= 0) {
          // A step machine (or a part): the plan's own child machine.
          expect(value).toEqual({ Ref: stack.getLogicalId(machine.parts[part]?.node.defaultChild as never) });
          continue;
        }
        const fn = stack.platform.functions[HANDLER_OF[placeholder]!].function;
        expect(value).toEqual({ 'Fn::GetAtt': [stack.getLogicalId(fn.node.defaultChild as never), 'Arn'] });
      }
    }
  });

  it('log to CloudWatch Logs at ALL without execution data, with X-Ray tracing', () => {
    for (const plan of plans) {
      const machine = stack.plans.get(plan.id)!;
      expect(resourceOf(machine.stateMachine).Properties).toMatchObject({
        LoggingConfiguration: {
          Level: 'ALL',
          IncludeExecutionData: false,
          Destinations: [
            {
              CloudWatchLogsLogGroup: {
                LogGroupArn: {
                  'Fn::GetAtt': [stack.getLogicalId(machine.logGroup.node.defaultChild as never), 'Arn'],
                },
              },
            },
          ],
        },
        TracingConfiguration: { Enabled: true },
      });
    }
  });

  it('may invoke exactly the functions their definition names, by unqualified ARN', () => {
    for (const plan of plans) {
      const machine = stack.plans.get(plan.id)!;
      const invoked = statementsOf(machine.stateMachine)
        .filter((s) => s.Effect === 'Allow' && [s.Action].flat().includes('lambda:InvokeFunction'))
        .flatMap((s) => [s.Resource].flat());
      const functions = placeholdersIn(compilePlan(plan).definitions[0]!.json).filter(
        (placeholder) => HANDLER_OF[placeholder] !== undefined,
      );
      const expected = functions.map((placeholder) => ({
        'Fn::GetAtt': [
          stack.getLogicalId(
            stack.platform.functions[HANDLER_OF[placeholder]!].function.node.defaultChild as never,
          ),
          'Arn',
        ],
      }));
      expect(invoked).toEqual(expect.arrayContaining(expected));
      expect(invoked).toHaveLength(expected.length);
    }
  });

  it('publish a version whose description carries the plan digest', () => {
    for (const plan of plans) {
      const machine = stack.plans.get(plan.id)!;
      expect(resourceOf({ node: { defaultChild: machine.version } }).Properties).toMatchObject({
        Description: `plan ${plan.id} v${plan.version} sha256:${planDigest(plan)}`,
        StateMachineArn: { Ref: stack.getLogicalId(machine.stateMachine.node.defaultChild as never) },
      });
    }
  });
});

describe('a split plan', () => {
  it('deploys its parts as child machines the parent may start, describe and stop (startExecution.sync:2)', async () => {
    const plan = plans.find((p) => p.id === 'local-demo')!;
    const compileOptions = { maxHistoryEvents: 200 };
    const compiled = compilePlan(plan, compileOptions);
    expect(compiled.definitions.length).toBeGreaterThan(1);

    const splitStack = new PlanPlatformStack(testApp(), 'Split', { platform: UNNOTIFIED });
    const machine = splitStack.addPlan(plan, { compileOptions });
    const t = Template.fromStack(splitStack);
    expect(machine.parts).toHaveLength(compiled.definitions.length - 1);
    compiled.definitions.slice(1).forEach((definition, i) => {
      const part = resourceOf(machine.parts[i]!, t, splitStack);
      expect(part.Properties.DefinitionString).toBe(definition.json);
      expect(part.Properties.StateMachineName).toBe(`plangate-${definition.name}`);
    });
    const root = resourceOf(machine.stateMachine, t, splitStack);
    expect(root.Properties.DefinitionString).toBe(compiled.definitions[0]!.json);

    // Whoever starts a part (the root or another part) may start exactly it and manage its executions.
    const all = [machine.stateMachine, ...machine.parts];
    for (const [i, definition] of compiled.definitions.slice(1).entries()) {
      const partRef = { Ref: splitStack.getLogicalId(machine.parts[i]!.node.defaultChild as never) };
      const starter = all.find(
        (m, j) =>
          (j === 0 ? compiled.definitions[0]! : compiled.definitions[j]!).json.includes(
            `\${${definition.arnSubstitution}}`,
          ) && m !== machine.parts[i],
      )!;
      const statements = statementsOf(starter, t, splitStack);
      const start = statements.find((s) => [s.Action].flat().includes('states:StartExecution'));
      expect([start?.Resource].flat()).toContainEqual(partRef);
      const manage = statements.find((s) => [s.Action].flat().includes('states:StopExecution'));
      expect(JSON.stringify(manage?.Resource)).toContain(`:execution:plangate-${definition.name}:*`);
      const rule = statements.find((s) => [s.Action].flat().includes('events:PutRule'));
      expect([rule?.Action].flat().sort()).toEqual([
        'events:DescribeRule',
        'events:PutRule',
        'events:PutTargets',
      ]);
      expect(JSON.stringify(rule?.Resource)).toContain(
        'rule/StepFunctionsGetEventsForStepFunctionsExecutionRule',
      );
    }
    const app = splitStack.node.scope as Parameters<AwsSolutionsChecks['validateScope']>[0];
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('PlanStateMachine props', () => {
  it('logs errors only when asked, and says why in the nag acknowledgement', () => {
    const app = testApp();
    const s = new PlanPlatformStack(app, 'Errors', { platform: UNNOTIFIED });
    const machine = s.addPlan(plans[0]!, { logLevel: LogLevel.ERROR });
    expect(resourceOf(machine.stateMachine, Template.fromStack(s), s).Properties).toMatchObject({
      LoggingConfiguration: { Level: 'ERROR', IncludeExecutionData: false },
    });
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('reads a plan file, and refuses one that does not parse with its located problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plangate-cdk-'));
    const s = new PlanPlatformStack(testApp(), 'Files', { platform: UNNOTIFIED });
    const fromFile = new PlanStateMachine(s, 'FromFile', {
      planFile: 'examples/release-api.json',
      platform: s.platform,
    });
    expect(fromFile.plan.id).toBe('release-api');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ "id": "x", "objective": "o", "steps": [ { "id": "a" } ] }');
    expect(() => new PlanStateMachine(s, 'Bad', { planFile: bad, platform: s.platform })).toThrow(
      new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:\\d+:\\d+ error`),
    );
  });

  it('refuses a plan that `plangate validate` rejects, file or object, with its located problems', () => {
    const s = new PlanPlatformStack(testApp(), 'Invalid', { platform: UNNOTIFIED });
    const file = join(PROJECT_ROOT, 'tests/fixtures/invalid/destructive-without-approval.yaml');
    // Schema-valid, but an ungated `rm -rf` is a validation error: the line the CLI prints for it.
    const [expected] = readFileSync(`${file}.expected`, 'utf8')
      .replaceAll('tests/fixtures/invalid/', '')
      .split('\n');
    expect(expected).toMatch(
      /^destructive-without-approval\.yaml:\d+:\d+ error destructive-without-approval /,
    );
    expect(() => new PlanStateMachine(s, 'FromFile', { planFile: file, platform: s.platform })).toThrow(
      `${dirname(file)}/${expected}`,
    );
    const plan = parsePlanBytes(readFileSync(file), { filename: file }).plan!;
    expect(() => new PlanStateMachine(s, 'FromObject', { plan, platform: s.platform })).toThrow(
      /plan "fixture" error destructive-without-approval .* \[\/steps\/2\/requiresApproval\]/,
    );
    // Nothing was added for either.
    expect(s.node.tryFindChild('FromFile')).toBeUndefined();
    expect(s.node.tryFindChild('FromObject')).toBeUndefined();
  });

  it('checks JSON Schema output shapes in the constructor too (Ajv is loaded with lib/cdk)', () => {
    const s = new PlanPlatformStack(testApp(), 'Shapes', { platform: UNNOTIFIED });
    const dir = mkdtempSync(join(tmpdir(), 'plangate-cdk-'));
    const fixture = readFileSync(
      join(PROJECT_ROOT, 'tests/fixtures/invalid/invalid-output-shape.yaml'),
      'utf8',
    );
    const file = join(dir, 'schema-shape.yaml');
    writeFileSync(file, fixture.replace('{ matches: "[0-9+" }', '{ schema: { type: strnig } }'));
    expect(() => new PlanStateMachine(s, 'Schema', { planFile: file, platform: s.platform })).toThrow(
      /schema-shape\.yaml:12:\d+ error invalid-output-shape output "n": not a valid JSON Schema/,
    );
    writeFileSync(file, fixture.replace('{ matches: "[0-9+" }', '{ schema: { type: string } }'));
    expect(new PlanStateMachine(s, 'Valid', { planFile: file, platform: s.platform }).plan.id).toBe(
      'fixture',
    );
  });

  it("refuses a name outside the platform's prefix (its grants would not cover it)", () => {
    const refused = new PlanPlatformStack(testApp(), 'Refused', { platform: UNNOTIFIED });
    expect(() => refused.addPlan(plans[0]!, { stateMachineName: 'other-name' })).toThrow(
      /must start with "plangate-"/,
    );
    const accepted = new PlanPlatformStack(testApp(), 'Accepted', { platform: UNNOTIFIED });
    const machine = accepted.addPlan(plans[0]!, { stateMachineName: 'plangate-custom' });
    expect(
      resourceOf(machine.stateMachine, Template.fromStack(accepted), accepted).Properties.StateMachineName,
    ).toBe('plangate-custom');
  });
});

describe('grantStartExecution', () => {
  it('allows starting the machine and its published version, nag-clean', () => {
    const app = testApp();
    const s = new PlanPlatformStack(app, 'Start', { platform: UNNOTIFIED });
    const machine = s.addPlan(plans[0]!);
    const launcher = new Role(s, 'Launcher', { assumedBy: new AccountRootPrincipal() });
    machine.grantStartExecution(launcher);
    const t = Template.fromStack(s);
    const role = { Ref: s.getLogicalId(launcher.node.defaultChild as never) };
    const start = (Object.values(t.findResources('AWS::IAM::Policy')) as Resource[])
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .find((st) => [st.Action].flat().includes('states:StartExecution'));
    expect(start?.Resource).toEqual([
      { Ref: s.getLogicalId(machine.stateMachine.node.defaultChild as never) },
      { 'Fn::GetAtt': [s.getLogicalId(machine.version), 'Arn'] },
    ]);
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
