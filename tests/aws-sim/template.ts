/**
 * A synthesized CloudFormation template read as the IAM simulator needs it: every resource given
 * the physical name and ARN it would have in one simulated account and region, the intrinsics
 * the template uses (Ref, Fn::GetAtt, Fn::Join, Fn::Sub) resolved to them, and, for each Lambda
 * function, its role, that role's policies as written, its environment and its asset directory;
 * for each role, its trust policy; each function's file system mounts; each state machine's
 * definition with its substitutions filled in and its role.
 * Anything this reader cannot resolve (another intrinsic, a managed policy, a permissions
 * boundary, an attribute it does not know) is an error naming the resource, never a guess.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type NamedPolicy, PolicyDocumentSchema } from '../../lib/aws-local/iam/policy-document.ts';

export const SIM_ACCOUNT = '123456789012';
export const SIM_REGION = 'us-east-1';

interface Resource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
}

export interface SimulatedFunction {
  readonly logicalId: string;
  /** The function's Description (the catalog's, lib/runtime/catalog.ts). */
  readonly description: string;
  readonly name: string;
  readonly arn: string;
  readonly roleArn: string;
  /** The bundle's directory under cdk.out. */
  readonly assetDir: string;
  /** The environment the template gives the function, resolved. */
  readonly environment: Readonly<Record<string, string>>;
  /** The file systems it mounts (FileSystemConfigs): where, and through which EFS access point. */
  readonly mounts: readonly { readonly localMountPath: string; readonly accessPointArn: string }[];
}

export interface SimulatedStateMachine {
  readonly logicalId: string;
  /** StateMachineName. */
  readonly name: string;
  readonly arn: string;
  readonly roleArn: string;
  /** DefinitionString with DefinitionSubstitutions filled in (`${Name}` → the resolved value). */
  readonly definition: string;
}

export interface SimulatedTemplate {
  readonly functions: readonly SimulatedFunction[];
  readonly stateMachines: readonly SimulatedStateMachine[];
  /** Role ARN → its identity policies (AWS::IAM::Policy resources and inline Policies). */
  readonly rolePolicies: ReadonlyMap<string, readonly NamedPolicy[]>;
  /** Resource ARN → its resource policy (DynamoDB tables' ResourcePolicy). */
  readonly resourcePolicies: ReadonlyMap<string, NamedPolicy>;
  /** Role ARN → its trust policy (AssumeRolePolicyDocument), which sts:AssumeRole is put to. */
  readonly trustPolicies: ReadonlyMap<string, NamedPolicy>;
  /** The physical name (Ref) of a resource. */
  nameOf(logicalId: string): string;
  /** The ARN (Fn::GetAtt Arn) of a resource. */
  arnOf(logicalId: string): string;
  /** Logical ids of the resources of one type. */
  idsOf(type: string): string[];
}

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

export function readSimulatedTemplate(cdkOut: string, stack = 'Plangate'): SimulatedTemplate {
  const template = JSON.parse(readFileSync(join(cdkOut, `${stack}.template.json`), 'utf8')) as {
    Resources: Record<string, Resource>;
  };
  const resources = template.Resources;
  const resourceOf = (id: string, where: string): Resource => {
    const r = resources[id];
    if (!r) throw new TemplateError(`${where}: no resource ${id} in the template`);
    return r;
  };
  const a = `${SIM_REGION}:${SIM_ACCOUNT}`;
  const nameOf = (id: string): string => {
    const r = resourceOf(id, 'Ref');
    // A secret's and a state machine's Ref is its ARN; everything else here is referred to by a generated physical name.
    if (
      r.Type === 'AWS::SecretsManager::Secret' ||
      r.Type === 'AWS::StepFunctions::StateMachine' ||
      r.Type === 'AWS::StepFunctions::Activity'
    )
      return arnOf(id);
    return `${stack}-${id}`;
  };
  const arnOf = (id: string): string => {
    const r = resourceOf(id, 'Fn::GetAtt Arn');
    const name = `${stack}-${id}`;
    switch (r.Type) {
      case 'AWS::DynamoDB::Table':
        return `arn:aws:dynamodb:${a}:table/${name}`;
      case 'AWS::IAM::Role':
        return `arn:aws:iam::${SIM_ACCOUNT}:role/${name}`;
      case 'AWS::Lambda::Function':
        return `arn:aws:lambda:${a}:function:${name}`;
      case 'AWS::Events::EventBus':
        return `arn:aws:events:${a}:event-bus/${name}`;
      case 'AWS::Logs::LogGroup':
        return `arn:aws:logs:${a}:log-group:${name}:*`;
      case 'AWS::KMS::Key':
        return `arn:aws:kms:${a}:key/${id.toLowerCase()}`;
      case 'AWS::S3::Bucket':
        return `arn:aws:s3:::${name.toLowerCase()}`;
      case 'AWS::SecretsManager::Secret':
        return `arn:aws:secretsmanager:${a}:secret:${name}-SimArn`;
      case 'AWS::StepFunctions::StateMachine':
        return `arn:aws:states:${a}:stateMachine:${String(r.Properties?.StateMachineName ?? name)}`;
      case 'AWS::StepFunctions::Activity':
        return `arn:aws:states:${a}:activity:${String(r.Properties?.Name ?? name)}`;
      case 'AWS::EFS::FileSystem':
        return `arn:aws:elasticfilesystem:${a}:file-system/fs-${id.toLowerCase()}`;
      case 'AWS::EFS::AccessPoint':
        return `arn:aws:elasticfilesystem:${a}:access-point/fsap-${id.toLowerCase()}`;
      case 'AWS::SQS::Queue':
        return `arn:aws:sqs:${a}:${name}`;
      default:
        throw new TemplateError(`Fn::GetAtt ${id}.Arn: the simulator gives no ARN to a ${r.Type}`);
    }
  };
  const attribute = (id: string, name: string): string => {
    if (name === 'Arn') return arnOf(id);
    const r = resourceOf(id, `Fn::GetAtt ${id}.${name}`);
    if (r.Type === 'AWS::DynamoDB::Table' && name === 'StreamArn') return `${arnOf(id)}/stream/sim`;
    if (r.Type === 'AWS::EC2::SecurityGroup' && name === 'GroupId') return `sg-${id.toLowerCase()}`;
    if (r.Type === 'AWS::ApiGatewayV2::Api' && name === 'ApiEndpoint')
      return `https://${id.toLowerCase()}.execute-api.${SIM_REGION}.amazonaws.com`;
    throw new TemplateError(`Fn::GetAtt ${id}.${name}: attribute ${name} of a ${r.Type} is not simulated`);
  };
  const PSEUDO: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': SIM_REGION,
    'AWS::AccountId': SIM_ACCOUNT,
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': stack,
  };
  const ref = (id: string): string => PSEUDO[id] ?? nameOf(id);
  const resolve = (value: unknown, where: string): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => resolve(v, `${where}/${i}`));
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value);
    const [key, arg] = entries[0] ?? [];
    if (entries.length === 1 && key !== undefined && (key === 'Ref' || key.startsWith('Fn::'))) {
      if (key === 'Ref') return ref(String(arg));
      if (key === 'Fn::GetAtt') {
        const [id, name] = arg as [string, string];
        return attribute(id, name);
      }
      if (key === 'Fn::Join') {
        const [sep, parts] = arg as [string, unknown[]];
        return parts.map((p, i) => String(resolve(p, `${where}/Fn::Join/${i}`))).join(sep);
      }
      if (key === 'Fn::Sub' && typeof arg === 'string')
        return arg.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
          const [id, att] = name.split('.');
          return att ? attribute(id as string, att) : ref(name);
        });
      throw new TemplateError(`${where}: ${key} is not an intrinsic the IAM simulator resolves`);
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, resolve(v, `${where}/${k}`)]));
  };
  const policy = (name: string, document: unknown, where: string): NamedPolicy => {
    const parsed = PolicyDocumentSchema.safeParse(resolve(document, where));
    if (!parsed.success)
      throw new TemplateError(
        `${where}: not a policy document the simulator evaluates: ${parsed.error.message}`,
      );
    return { name, document: parsed.data };
  };
  const idsOf = (type: string) => Object.keys(resources).filter((id) => resources[id]?.Type === type);

  const rolePolicies = new Map<string, NamedPolicy[]>();
  const trustPolicies = new Map<string, NamedPolicy>();
  const attach = (roleRef: unknown, p: NamedPolicy) => {
    const roleArn = arnOf(String((roleRef as { Ref?: unknown }).Ref));
    rolePolicies.set(roleArn, [...(rolePolicies.get(roleArn) ?? []), p]);
  };
  for (const id of idsOf('AWS::IAM::Role')) {
    const props = resources[id]?.Properties ?? {};
    if (props.ManagedPolicyArns || props.PermissionsBoundary)
      throw new TemplateError(
        `Resources/${id}: managed policies and permissions boundaries are not in the template, so the simulator cannot evaluate them`,
      );
    rolePolicies.set(arnOf(id), []);
    if (props.AssumeRolePolicyDocument)
      trustPolicies.set(
        arnOf(id),
        policy(
          `${id} (trust policy)`,
          onTheRole(props.AssumeRolePolicyDocument, arnOf(id)),
          `Resources/${id}/Properties/AssumeRolePolicyDocument`,
        ),
      );
    for (const [i, inline] of (
      (props.Policies ?? []) as { PolicyName: string; PolicyDocument: unknown }[]
    ).entries())
      attach(
        { Ref: id },
        policy(`${id}/${inline.PolicyName}`, inline.PolicyDocument, `Resources/${id}/Policies/${i}`),
      );
  }
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const id of idsOf(type)) {
      const props = resources[id]?.Properties ?? {};
      if (props.Users || props.Groups)
        throw new TemplateError(`Resources/${id}: policies of users or groups are not simulated`);
      const p = policy(id, props.PolicyDocument, `Resources/${id}/PolicyDocument`);
      for (const role of (props.Roles ?? []) as unknown[]) attach(role, p);
    }
  }
  const resourcePolicies = new Map<string, NamedPolicy>();
  for (const id of idsOf('AWS::DynamoDB::Table')) {
    const document = (resources[id]?.Properties?.ResourcePolicy as { PolicyDocument?: unknown } | undefined)
      ?.PolicyDocument;
    if (document)
      resourcePolicies.set(
        arnOf(id),
        policy(`${id} (resource policy)`, document, `Resources/${id}/Properties/ResourcePolicy`),
      );
  }

  const functions = idsOf('AWS::Lambda::Function').map((id): SimulatedFunction => {
    const r = resources[id] as Resource;
    const props = r.Properties ?? {};
    const asset = r.Metadata?.['aws:asset:path'];
    if (typeof asset !== 'string')
      throw new TemplateError(`Resources/${id}: no aws:asset:path (not bundled?)`);
    const variables =
      (props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
    return {
      logicalId: id,
      description: String(props.Description ?? ''),
      name: nameOf(id),
      arn: arnOf(id),
      roleArn: String(resolve(props.Role, `Resources/${id}/Properties/Role`)),
      assetDir: join(cdkOut, asset),
      environment: Object.fromEntries(
        Object.entries(variables).map(([k, v]) => [
          k,
          String(resolve(v, `Resources/${id}/Environment/${k}`)),
        ]),
      ),
      mounts: ((props.FileSystemConfigs ?? []) as { Arn: unknown; LocalMountPath: string }[]).map((c, i) => ({
        localMountPath: c.LocalMountPath,
        accessPointArn: String(resolve(c.Arn, `Resources/${id}/FileSystemConfigs/${i}`)),
      })),
    };
  });
  const stateMachines = idsOf('AWS::StepFunctions::StateMachine').map((id): SimulatedStateMachine => {
    const props = resources[id]?.Properties ?? {};
    const where = `Resources/${id}/Properties`;
    const substitutions = Object.fromEntries(
      Object.entries((props.DefinitionSubstitutions ?? {}) as Record<string, unknown>).map(([k, v]) => [
        k,
        String(resolve(v, `${where}/DefinitionSubstitutions/${k}`)),
      ]),
    );
    const text = String(resolve(props.DefinitionString, `${where}/DefinitionString`));
    return {
      logicalId: id,
      name: String(props.StateMachineName ?? nameOf(id)),
      arn: arnOf(id),
      roleArn: String(resolve(props.RoleArn, `${where}/RoleArn`)),
      definition: text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (whole, key: string) => substitutions[key] ?? whole),
    };
  });
  return {
    functions,
    stateMachines,
    rolePolicies,
    resourcePolicies,
    trustPolicies,
    nameOf,
    arnOf,
    idsOf,
  };
}

/** A trust policy's statements name no Resource: the role they belong to is theirs. */
function onTheRole(document: unknown, roleArn: string): unknown {
  const { Statement: statements, ...rest } = document as { Statement?: unknown };
  const each = (st: unknown) =>
    typeof st === 'object' && st !== null && !('Resource' in st) && !('NotResource' in st)
      ? { ...st, Resource: roleArn }
      : st;
  return { ...rest, Statement: Array.isArray(statements) ? statements.map(each) : each(statements) };
}
