/**
 * Run-time plan deployment: a plan submitted through the Plans API needs no CDK deploy. The same
 * compiler that CDK runs at synth time compiles it; the `${...}` placeholders are filled with the
 * platform's resources; the state machine is created (or updated) through @aws-sdk/client-sfn and
 * a version is published per plan version, its description carrying the plan digest. Deploying
 * the same digest again changes nothing and returns the same version.
 */
import { createHash } from 'node:crypto';
import {
  CreateActivityCommand,
  CreateStateMachineCommand,
  DescribeStateMachineCommand,
  ListStateMachineVersionsCommand,
  type LogLevel,
  type SFNClient,
  StateMachineAlreadyExists,
  StateMachineDoesNotExist,
  UpdateStateMachineCommand,
} from '@aws-sdk/client-sfn';
import {
  agentActivityName,
  agentActivityPlaceholder,
  type CompiledDefinition,
  type CompileOptions,
  type CompileResult,
  childPlaceholder,
  compilePlan,
  runsOnWorker,
} from '../compiler/index.ts';
import { planDigest } from '../plan/digest.ts';
import type { Plan } from '../plan/schema.ts';
import { definitionHash } from '../runtime/shared/definition-hash.ts';
import { InvalidInputError } from '../runtime/shared/errors.ts';

export interface DeployPlanInput {
  readonly sfn: SFNClient;
  /** A validated plan (defaults applied). */
  readonly plan: Plan;
  /** The role the state machines run with (the platform's runtime plan role). */
  readonly roleArn: string;
  /** Placeholder name → value for the harness functions (the platform's `PLANGATE_SUBSTITUTIONS`). */
  readonly substitutions: Readonly<Record<string, string>>;
  /**
   * State machines are named `<namePrefix>-<planId>` (parts `…-part<n>`).
   * @default 'plangate'
   */
  readonly namePrefix?: string;
  /** Log group ARN (ending `:*`) for the machines' logs. @default - no logging */
  readonly logGroupArn?: string;
  /** @default 'ALL' */
  readonly logLevel?: Extract<LogLevel, 'ALL' | 'ERROR'>;
  /** X-Ray tracing. @default true */
  readonly tracing?: boolean;
  /** Passed to the compiler. */
  readonly compileOptions?: CompileOptions;
  /**
   * The plan as already compiled with `compileOptions` (the Plans API's deployability check did),
   * so it is not compiled twice. @default - compiled here
   */
  readonly compiled?: CompileResult;
}

export interface DeployedMachine {
  readonly name: string;
  readonly stateMachineArn: string;
  /** The version published for this plan version (what executions should start). */
  readonly stateMachineVersionArn: string;
  /** False when this exact definition was already published for this digest. */
  readonly changed: boolean;
}

export interface DeployedPlan extends DeployedMachine {
  /** The plan digest (hex) the version descriptions carry. */
  readonly digest: string;
  /** Child machines of a split plan, in the compiler's order (its definitions after the first); empty when the plan fits one machine. */
  readonly parts: readonly DeployedMachine[];
  /** The activity of each agent target the plan queues work on, by target (`<namePrefix>-<target>`). */
  readonly activities: Readonly<Record<string, string>>;
  /**
   * The hash of the definitions as deployed, the main one first, then the parts in the compiler's
   * order (lib/runtime/shared/definition-hash.ts): what an execution of this plan is pinned to.
   */
  readonly definitionHash: string;
}

/** The agent targets whose steps run on workers, in plan order. */
export function workerTargets(plan: Plan): string[] {
  return [...new Set(plan.steps.filter(runsOnWorker).map((step) => step.target as string))];
}

/**
 * Makes sure each agent target's activity exists (CreateActivity is idempotent by name) and
 * returns target → activity ARN, the substitutions of the plan's activity Tasks.
 */
export async function ensureActivities(
  sfn: SFNClient,
  plan: Plan,
  namePrefix: string,
): Promise<Record<string, string>> {
  const activities: Record<string, string> = {};
  for (const target of workerTargets(plan)) {
    const created = await sfn.send(
      new CreateActivityCommand({ name: agentActivityName(namePrefix, target) }),
    );
    activities[target] = created.activityArn as string;
  }
  return activities;
}

/** Step Functions' name rule: 1–80 characters of letters, digits, `-` and `_`. */
const MAX_NAME_LENGTH = 80;
const PLACEHOLDER = /\$\{([A-Za-z0-9_]+)\}/g;

/**
 * State machine names for a compiled plan: `rootName` for the main definition, and for each part
 * `rootName` plus the part's suffix as the compiler named it (`-part-<n>`). A name longer than
 * Step Functions allows keeps its start and its suffix with a hash of the whole in between, so
 * distinct names stay distinct.
 */
export function stateMachineNames(
  rootName: string,
  definitions: readonly Pick<CompiledDefinition, 'name'>[],
): string[] {
  const rootDefinition = definitions[0]?.name ?? '';
  return definitions.map((definition, i) => {
    if (i === 0) return fitName(rootName, '');
    const suffix = definition.name.startsWith(`${rootDefinition}-`)
      ? definition.name.slice(rootDefinition.length)
      : `-${definition.name}`;
    return fitName(rootName, suffix);
  });
}

/**
 * The prefix of the machines plans submitted at run time get (`<namePrefix>-run-<planId>`): the
 * Plans API deploys under it, and may create and update only machines under it, so a plan
 * deployed as code (`<namePrefix>-<planId>`, never under it) cannot be replaced at run time.
 */
export function runtimeNamePrefix(namePrefix: string): string {
  return `${namePrefix}-run`;
}

/** The default name of a plan's main state machine: `<namePrefix>-<planId>`. */
export function planStateMachineName(namePrefix: string, planId: string): string {
  return fitName(`${namePrefix}-${planId}`, '');
}

function fitName(base: string, suffix: string): string {
  const name = `${base}${suffix}`;
  if (name.length <= MAX_NAME_LENGTH) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 10);
  return `${base.slice(0, MAX_NAME_LENGTH - suffix.length - hash.length - 1)}-${hash}${suffix}`;
}

/** `plan <id> v<version> sha256:<digest>`: what each published version's description says. */
export function versionDescription(plan: Plan, digest: string): string {
  return `plan ${plan.id} v${plan.version} sha256:${digest}`;
}

/**
 * The `${…}` placeholders in a definition's text, in order of first use: what filling it in
 * replaces. What a definition uses comes from the compiler (`CompiledDefinition.resources`).
 */
export function placeholdersIn(definition: string): string[] {
  return [...new Set([...definition.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
}

/** A child definition of a split plan, as the compiler returns it. */
export type PartDefinition = Pick<CompiledDefinition, 'resources' | 'arnSubstitution'>;

/** The substitution a parent uses for the ARN of part `index` (0-based). */
export function partPlaceholder(part: PartDefinition, index: number): string {
  return part.arnSubstitution ?? childPlaceholder(index + 1);
}

/**
 * Indexes of the parts (0-based) in an order where every
 * part comes after the parts it starts. Throws if parts start each other in a cycle.
 */
export function partOrder(partDefinitions: readonly PartDefinition[]): number[] {
  const placeholderIndex = new Map(partDefinitions.map((part, i) => [partPlaceholder(part, i), i]));
  const needs = partDefinitions.map((part) =>
    part.resources
      .map((resource) => placeholderIndex.get(resource.placeholder))
      .filter((i): i is number => i !== undefined),
  );
  const order: number[] = [];
  const state = new Array<'new' | 'visiting' | 'done'>(partDefinitions.length).fill('new');
  const visit = (i: number): void => {
    if (state[i] === 'done') return;
    if (state[i] === 'visiting') throw new InvalidInputError(`part ${i + 1} starts itself through its parts`);
    state[i] = 'visiting';
    for (const j of needs[i] ?? []) visit(j);
    state[i] = 'done';
    order.push(i);
  };
  for (let i = 0; i < partDefinitions.length; i++) visit(i);
  return order;
}

/**
 * Replaces every `${Name}` with its value; throws, naming each, when some have none (a last
 * guard: deployPlan checked the compiler's resource list before creating anything).
 */
export function applySubstitutions(
  definition: string,
  substitutions: Readonly<Record<string, string>>,
  where: string,
): string {
  const missing = placeholdersIn(definition).filter((name) => substitutions[name] === undefined);
  if (missing.length > 0) {
    throw new InvalidInputError(
      `${where}: no substitution for ${missing.map((name) => `\${${name}}`).join(', ')}`,
      { location: 'substitutions' },
    );
  }
  return definition.replace(PLACEHOLDER, (_, name: string) => substitutions[name] as string);
}

/** Compiles `plan` and creates or updates its state machine(s), publishing one version per plan version. */
export async function deployPlan(input: DeployPlanInput): Promise<DeployedPlan> {
  const { sfn, plan, roleArn } = input;
  const namePrefix = input.namePrefix ?? 'plangate';
  const digest = planDigest(plan);
  const description = versionDescription(plan, digest);
  const compiled = input.compiled ?? compilePlan(plan, input.compileOptions);
  const [root, ...children] = compiled.definitions;
  if (!root) throw new InvalidInputError(`plan ${plan.id} compiled to no definition`, { location: 'plan' });

  // Check every definition's placeholders before creating anything: bad input changes nothing.
  const [rootName, ...partNames] = stateMachineNames(
    planStateMachineName(namePrefix, plan.id),
    compiled.definitions,
  );
  const targets = workerTargets(plan);
  const provided = new Set([
    ...Object.keys(input.substitutions),
    ...children.map((child, i) => partPlaceholder(child, i)),
    ...targets.map(agentActivityPlaceholder),
  ]);
  for (const [index, definition] of compiled.definitions.entries()) {
    const missing = definition.resources
      .map((resource) => resource.placeholder)
      .filter((name) => !provided.has(name));
    if (missing.length > 0) {
      throw new InvalidInputError(
        `definition ${definition.name}: no substitution for ${missing.map((n) => `\${${n}}`).join(', ')}`,
        { location: `definitions[${index}]` },
      );
    }
  }

  // Workers poll these; they exist before any execution can queue work on them.
  const activities = await ensureActivities(sfn, plan, namePrefix);
  const target = await machineArnScope(sfn, roleArn);
  const settings = {
    roleArn,
    ...(input.logGroupArn
      ? {
          loggingConfiguration: {
            level: input.logLevel ?? 'ALL',
            includeExecutionData: false,
            destinations: [{ cloudWatchLogsLogGroup: { logGroupArn: input.logGroupArn } }],
          },
        }
      : {}),
    tracingConfiguration: { enabled: input.tracing ?? true },
  };

  // Parts before whatever starts them, so each is started pinned to the version just published.
  const parts: DeployedMachine[] = new Array(children.length);
  const partTexts: string[] = new Array(children.length);
  const substitutions: Record<string, string> = {
    ...input.substitutions,
    ...Object.fromEntries(targets.map((t) => [agentActivityPlaceholder(t), activities[t] as string])),
  };
  for (const i of partOrder(children)) {
    const child = children[i] as (typeof children)[number];
    const name = partNames[i] as string;
    partTexts[i] = applySubstitutions(child.json, substitutions, `definition ${child.name}`);
    const deployed = await upsertMachine(sfn, target(name), name, {
      ...settings,
      definition: partTexts[i],
      versionDescription: description,
    });
    parts[i] = deployed;
    substitutions[partPlaceholder(child, i)] = deployed.stateMachineVersionArn;
  }
  const name = rootName as string;
  const rootText = applySubstitutions(root.json, substitutions, `definition ${root.name}`);
  const deployed = await upsertMachine(sfn, target(name), name, {
    ...settings,
    definition: rootText,
    versionDescription: description,
  });
  return { ...deployed, digest, parts, activities, definitionHash: definitionHash([rootText, ...partTexts]) };
}

interface MachineSettings {
  readonly definition: string;
  readonly roleArn: string;
  readonly versionDescription: string;
  readonly loggingConfiguration?: {
    level: 'ALL' | 'ERROR';
    includeExecutionData: boolean;
    destinations: { cloudWatchLogsLogGroup: { logGroupArn: string } }[];
  };
  readonly tracingConfiguration: { enabled: boolean };
}

async function upsertMachine(
  sfn: SFNClient,
  stateMachineArn: string,
  name: string,
  settings: MachineSettings,
): Promise<DeployedMachine> {
  const existing = await describeIfExists(sfn, stateMachineArn);
  if (!existing) {
    try {
      const created = await sfn.send(
        new CreateStateMachineCommand({ name, type: 'STANDARD', publish: true, ...settings }),
      );
      if (created.stateMachineVersionArn)
        return {
          name,
          stateMachineArn: created.stateMachineArn as string,
          stateMachineVersionArn: created.stateMachineVersionArn,
          changed: true,
        };
    } catch (error) {
      if (!(error instanceof StateMachineAlreadyExists)) throw error;
    }
    // A concurrent launch created it first (an identical create answers without a new version,
    // a different one is refused): carry on as for an existing machine.
  }
  const latest = await latestVersion(sfn, stateMachineArn);
  if (
    latest &&
    latest.description === settings.versionDescription &&
    latest.definition === settings.definition &&
    latest.roleArn === settings.roleArn
  ) {
    return { name, stateMachineArn, stateMachineVersionArn: latest.arn, changed: false };
  }
  const updated = await sfn.send(
    new UpdateStateMachineCommand({ stateMachineArn, publish: true, ...settings }),
  );
  return {
    name,
    stateMachineArn,
    stateMachineVersionArn: updated.stateMachineVersionArn as string,
    changed: true,
  };
}

async function describeIfExists(sfn: SFNClient, stateMachineArn: string) {
  try {
    return await sfn.send(new DescribeStateMachineCommand({ stateMachineArn }));
  } catch (error) {
    if (error instanceof StateMachineDoesNotExist) return undefined;
    throw error;
  }
}

/** The most recently published version and what it holds, if any version exists. */
async function latestVersion(sfn: SFNClient, stateMachineArn: string) {
  const listed = await sfn.send(new ListStateMachineVersionsCommand({ stateMachineArn, maxResults: 1 }));
  const arn = listed.stateMachineVersions?.[0]?.stateMachineVersionArn;
  if (!arn) return undefined;
  const version = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn: arn }));
  return { arn, description: version.description, definition: version.definition, roleArn: version.roleArn };
}

/**
 * State machine ARNs in the role's account and partition and the client's region: a machine's
 * role is always in its own account, so the ARN is known without listing every machine.
 */
async function machineArnScope(sfn: SFNClient, roleArn: string): Promise<(name: string) => string> {
  const match = /^arn:([^:]+):iam::(\d{12}):role\/.+$/.exec(roleArn);
  if (!match)
    throw new InvalidInputError(`roleArn is not an IAM role ARN: ${roleArn}`, { location: 'roleArn' });
  const region = await sfn.config.region();
  return (name) => `arn:${match[1]}:states:${region}:${match[2]}:stateMachine:${name}`;
}
