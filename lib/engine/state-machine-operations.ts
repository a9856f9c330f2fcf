/**
 * What the state machine operations do: machines, their published versions and aliases, and
 * definition validation, kept in the registry (one durable snapshot, written before each answer).
 */
import type * as sfn from '@aws-sdk/client-sfn';
import {
  type ArnScope,
  assertValidName,
  stateMachineArn as buildMachineArn,
  parseStateMachineArn,
} from './core/arn.ts';
import {
  type MachineRecord,
  type MachineRegistry,
  newRevisionId,
  type VersionRecord,
  withTags,
} from './core/registry.ts';
import { paginate } from './pagination.ts';
import { SfnServiceError } from './types.ts';
import { validateDefinition } from './validate/index.ts';

/** What AWS describes for a machine created without logging or tracing configuration. */
export const DEFAULT_LOGGING: sfn.LoggingConfiguration = Object.freeze({
  level: 'OFF',
  includeExecutionData: false,
});
export const DEFAULT_TRACING: sfn.TracingConfiguration = Object.freeze({ enabled: false });

/** ValidateStateMachineDefinition: AWS's default and largest `maxResults`. */
const MAX_DIAGNOSTICS = 100;

/** Readonly props of {@link StateMachineOperations}. */
export interface StateMachineOperationsProps {
  readonly scope: ArnScope;
  readonly registry: MachineRegistry;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export class StateMachineOperations {
  private readonly scope: ArnScope;
  private readonly registry: MachineRegistry;
  private readonly now: () => number;

  constructor(props: StateMachineOperationsProps) {
    this.scope = props.scope;
    this.registry = props.registry;
    this.now = props.now;
  }

  async createStateMachine(input: sfn.CreateStateMachineInput): Promise<sfn.CreateStateMachineOutput> {
    assertValidName(input.name, 'State Machine name');
    const definition = this.checkedDefinition(input.definition);
    const type = input.type ?? 'STANDARD';
    if (type !== 'STANDARD' && type !== 'EXPRESS')
      throw new SfnServiceError('ValidationException', `Invalid type '${type}'`);
    const arn = buildMachineArn(this.scope, input.name);
    const tags = withTags(undefined, input.tags, arn);
    const existing = this.registry.find(input.name);
    if (existing) {
      if (
        existing.definition === definition &&
        existing.roleArn === input.roleArn &&
        existing.type === type
      ) {
        return { stateMachineArn: arn, creationDate: new Date(existing.creationDate) };
      }
      throw new SfnServiceError('StateMachineAlreadyExists', `State Machine Already Exists: '${arn}'`);
    }
    const machine: MachineRecord = {
      name: input.name,
      arn,
      definition,
      roleArn: input.roleArn ?? `arn:aws:iam::${this.scope.accountId}:role/plangate-engine`,
      type,
      creationDate: this.now(),
      revisionId: newRevisionId(),
      versions: [],
      nextVersion: 1,
      aliases: [],
      loggingConfiguration: input.loggingConfiguration,
      tracingConfiguration: input.tracingConfiguration,
      ...(tags.length > 0 ? { tags } : {}),
    };
    const out: sfn.CreateStateMachineOutput = {
      stateMachineArn: arn,
      creationDate: new Date(machine.creationDate),
    };
    if (input.publish) {
      const version = this.publish(machine, input.versionDescription);
      out.stateMachineVersionArn = `${arn}:${version}`;
    }
    this.registry.add(machine);
    return out;
  }

  async updateStateMachine(input: sfn.UpdateStateMachineInput): Promise<sfn.UpdateStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    // a version or alias cannot be updated: AWS answers as for a machine that does not exist
    if (ref.version !== undefined || ref.alias !== undefined) {
      throw new SfnServiceError(
        'StateMachineDoesNotExist',
        `State Machine Does Not Exist: '${input.stateMachineArn}'`,
      );
    }
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    if (input.definition !== undefined) machine.definition = this.checkedDefinition(input.definition);
    if (input.roleArn !== undefined) machine.roleArn = input.roleArn;
    if (input.loggingConfiguration) machine.loggingConfiguration = input.loggingConfiguration;
    if (input.tracingConfiguration) machine.tracingConfiguration = input.tracingConfiguration;
    machine.updateDate = this.now();
    machine.revisionId = newRevisionId();
    const out: sfn.UpdateStateMachineOutput = {
      updateDate: new Date(machine.updateDate),
      revisionId: machine.revisionId,
    };
    if (input.publish)
      out.stateMachineVersionArn = `${machine.arn}:${this.publish(machine, input.versionDescription)}`;
    this.registry.save();
    return out;
  }

  async describeStateMachine(input: sfn.DescribeStateMachineInput): Promise<sfn.DescribeStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    let definition = machine.definition;
    let roleArn = machine.roleArn;
    let revisionId = machine.revisionId;
    let description: string | undefined = machine.description;
    let arn = machine.arn;
    if (ref.version !== undefined || ref.alias !== undefined) {
      const version = this.resolveVersion(machine, ref);
      definition = version.definition;
      roleArn = version.roleArn;
      revisionId = version.revisionId;
      description = version.description;
      arn = `${machine.arn}:${version.version}`;
    }
    return {
      stateMachineArn: arn,
      name: machine.name,
      status: 'ACTIVE',
      definition,
      roleArn,
      type: machine.type,
      creationDate: new Date(machine.creationDate),
      revisionId,
      ...(description ? { description } : {}),
      loggingConfiguration: (machine.loggingConfiguration as sfn.LoggingConfiguration) ?? DEFAULT_LOGGING,
      tracingConfiguration: (machine.tracingConfiguration as sfn.TracingConfiguration) ?? DEFAULT_TRACING,
    };
  }

  async listStateMachines(input: sfn.ListStateMachinesInput): Promise<sfn.ListStateMachinesOutput> {
    const all = this.registry
      .all()
      .sort((a, b) => a.creationDate - b.creationDate)
      .map((m) => ({
        stateMachineArn: m.arn,
        name: m.name,
        type: m.type,
        creationDate: new Date(m.creationDate),
      }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachines: page, nextToken };
  }

  async deleteStateMachine(input: sfn.DeleteStateMachineInput): Promise<sfn.DeleteStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    if (ref.version !== undefined)
      return this.deleteStateMachineVersion({ stateMachineVersionArn: input.stateMachineArn });
    if (ref.alias !== undefined)
      return this.deleteStateMachineAlias({ stateMachineAliasArn: input.stateMachineArn });
    if (this.registry.find(ref.name)) this.registry.remove(ref.name);
    return {};
  }

  async publishStateMachineVersion(
    input: sfn.PublishStateMachineVersionInput,
  ): Promise<sfn.PublishStateMachineVersionOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    if (input.revisionId !== undefined && input.revisionId !== machine.revisionId) {
      throw new SfnServiceError('ConflictException', 'The revision id does not match the latest revision');
    }
    const latest = machine.versions.at(-1);
    if (latest && latest.revisionId === machine.revisionId) {
      return {
        stateMachineVersionArn: `${machine.arn}:${latest.version}`,
        creationDate: new Date(latest.creationDate),
      };
    }
    const version = this.publish(machine, input.description);
    this.registry.save();
    return { stateMachineVersionArn: `${machine.arn}:${version}`, creationDate: new Date(this.now()) };
  }

  async listStateMachineVersions(
    input: sfn.ListStateMachineVersionsInput,
  ): Promise<sfn.ListStateMachineVersionsOutput> {
    const machine = this.registry.get(
      parseStateMachineArn(this.scope, input.stateMachineArn).name,
      String(input.stateMachineArn),
    );
    const all = [...machine.versions].reverse().map((v) => ({
      stateMachineVersionArn: `${machine.arn}:${v.version}`,
      creationDate: new Date(v.creationDate),
    }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachineVersions: page, nextToken };
  }

  async deleteStateMachineVersion(
    input: sfn.DeleteStateMachineVersionInput,
  ): Promise<sfn.DeleteStateMachineVersionOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineVersionArn);
    if (ref.version === undefined)
      throw new SfnServiceError('ValidationException', 'Not a state machine version ARN');
    const machine = this.registry.find(ref.name);
    if (!machine) return {};
    const arn = `${machine.arn}:${ref.version}`;
    if (machine.aliases.some((a) => a.routingConfiguration.some((r) => r.stateMachineVersionArn === arn))) {
      throw new SfnServiceError('ConflictException', `Version ${arn} is referenced by an alias`);
    }
    machine.versions = machine.versions.filter((v) => v.version !== ref.version);
    this.registry.save();
    return {};
  }

  async createStateMachineAlias(
    input: sfn.CreateStateMachineAliasInput,
  ): Promise<sfn.CreateStateMachineAliasOutput> {
    assertValidName(input.name, 'alias name');
    if (/^\d+$/.test(input.name))
      throw new SfnServiceError('ValidationException', 'An alias name cannot be a number');
    const routing = this.checkedRouting(input.routingConfiguration);
    const versionArn = String(routing[0]?.stateMachineVersionArn);
    const machine = this.registry.get(parseStateMachineArn(this.scope, versionArn).name, versionArn);
    const arn = `${machine.arn}:${input.name}`;
    const existing = machine.aliases.find((a) => a.name === input.name);
    if (existing) {
      if (JSON.stringify(existing.routingConfiguration) === JSON.stringify(routing)) {
        return { stateMachineAliasArn: arn, creationDate: new Date(existing.creationDate) };
      }
      throw new SfnServiceError('ConflictException', `Alias ${arn} already exists`);
    }
    const now = this.now();
    machine.aliases.push({
      name: input.name,
      routingConfiguration: routing,
      creationDate: now,
      updateDate: now,
      ...(input.description ? { description: input.description } : {}),
    });
    this.registry.save();
    return { stateMachineAliasArn: arn, creationDate: new Date(now) };
  }

  async describeStateMachineAlias(
    input: sfn.DescribeStateMachineAliasInput,
  ): Promise<sfn.DescribeStateMachineAliasOutput> {
    const { machine, alias } = this.findAlias(input.stateMachineAliasArn);
    return {
      stateMachineAliasArn: `${machine.arn}:${alias.name}`,
      name: alias.name,
      routingConfiguration: alias.routingConfiguration,
      creationDate: new Date(alias.creationDate),
      updateDate: new Date(alias.updateDate),
      ...(alias.description ? { description: alias.description } : {}),
    };
  }

  async updateStateMachineAlias(
    input: sfn.UpdateStateMachineAliasInput,
  ): Promise<sfn.UpdateStateMachineAliasOutput> {
    const { alias } = this.findAlias(input.stateMachineAliasArn);
    if (input.routingConfiguration)
      alias.routingConfiguration = this.checkedRouting(input.routingConfiguration);
    if (input.description !== undefined) alias.description = input.description;
    alias.updateDate = this.now();
    this.registry.save();
    return { updateDate: new Date(alias.updateDate) };
  }

  async listStateMachineAliases(
    input: sfn.ListStateMachineAliasesInput,
  ): Promise<sfn.ListStateMachineAliasesOutput> {
    const machine = this.registry.get(
      parseStateMachineArn(this.scope, input.stateMachineArn).name,
      String(input.stateMachineArn),
    );
    const all = machine.aliases.map((a) => ({
      stateMachineAliasArn: `${machine.arn}:${a.name}`,
      creationDate: new Date(a.creationDate),
    }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachineAliases: page, nextToken };
  }

  async deleteStateMachineAlias(
    input: sfn.DeleteStateMachineAliasInput,
  ): Promise<sfn.DeleteStateMachineAliasOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineAliasArn);
    const machine = this.registry.find(ref.name);
    if (machine && ref.alias !== undefined) {
      machine.aliases = machine.aliases.filter((a) => a.name !== ref.alias);
      this.registry.save();
    }
    return {};
  }

  async validateStateMachineDefinition(
    input: sfn.ValidateStateMachineDefinitionInput,
  ): Promise<sfn.ValidateStateMachineDefinitionOutput> {
    if (typeof input.definition !== 'string') {
      throw new SfnServiceError('ValidationException', 'definition is required');
    }
    const problems = validateDefinition(input.definition);
    // at most maxResults diagnostics (0 or none: AWS's default and limit, 100); the rest truncated
    const limit = input.maxResults || MAX_DIAGNOSTICS;
    return {
      result: problems.length === 0 ? 'OK' : 'FAIL',
      diagnostics: problems.slice(0, limit).map((p) => ({
        severity: 'ERROR',
        code: p.code,
        message: p.message,
        location: p.location,
      })),
      truncated: problems.length > limit,
    };
  }

  private checkedDefinition(definition: unknown): string {
    if (typeof definition !== 'string')
      throw new SfnServiceError(
        'InvalidDefinition',
        'Invalid State Machine Definition: definition is required',
      );
    const problems = validateDefinition(definition);
    if (problems.length > 0) {
      const listed = problems.map((p) => `${p.code}: ${p.message} at ${p.location || '/'}`).join(', ');
      throw new SfnServiceError('InvalidDefinition', `Invalid State Machine Definition: '${listed}'`);
    }
    return definition;
  }

  private publish(machine: MachineRecord, description: string | undefined): number {
    const version = machine.nextVersion++;
    machine.versions.push({
      version,
      definition: machine.definition,
      roleArn: machine.roleArn,
      revisionId: machine.revisionId,
      creationDate: this.now(),
      ...(description ? { description } : {}),
    });
    return version;
  }

  /**
   * The version a version or alias ARN names (an alias picks one of its versions by their
   * routing weights); AWS's ResourceNotFound when there is none.
   */
  resolveVersion(machine: MachineRecord, ref: { version?: number; alias?: string }): VersionRecord {
    let number = ref.version;
    if (ref.alias !== undefined) {
      const alias = machine.aliases.find((a) => a.name === ref.alias);
      if (!alias)
        throw new SfnServiceError('ResourceNotFound', `Alias not found: '${machine.arn}:${ref.alias}'`);
      const roll = Math.random() * 100;
      let acc = 0;
      let chosen = alias.routingConfiguration[0]?.stateMachineVersionArn ?? '';
      for (const r of alias.routingConfiguration) {
        acc += r.weight;
        if (roll < acc) {
          chosen = r.stateMachineVersionArn;
          break;
        }
      }
      number = parseStateMachineArn(this.scope, chosen).version;
    }
    const version = machine.versions.find((v) => v.version === number);
    if (!version)
      throw new SfnServiceError('ResourceNotFound', `Version not found: '${machine.arn}:${number}'`);
    return version;
  }

  private checkedRouting(routing: sfn.RoutingConfigurationListItem[] | undefined) {
    if (!routing || routing.length < 1 || routing.length > 2) {
      throw new SfnServiceError('ValidationException', 'routingConfiguration must have 1 or 2 entries');
    }
    let total = 0;
    const out: Array<{ stateMachineVersionArn: string; weight: number }> = [];
    let machineName: string | undefined;
    for (const r of routing) {
      const ref = parseStateMachineArn(this.scope, r.stateMachineVersionArn);
      if (ref.version === undefined)
        throw new SfnServiceError('ValidationException', 'routingConfiguration needs version ARNs');
      if (machineName !== undefined && machineName !== ref.name) {
        throw new SfnServiceError(
          'ValidationException',
          'routingConfiguration versions must belong to one state machine',
        );
      }
      machineName = ref.name;
      const machine = this.registry.get(ref.name, String(r.stateMachineVersionArn));
      this.resolveVersion(machine, ref);
      const weight = Number(r.weight);
      if (!Number.isInteger(weight) || weight < 0 || weight > 100)
        throw new SfnServiceError('ValidationException', 'weight must be 0..100');
      total += weight;
      out.push({ stateMachineVersionArn: `${machine.arn}:${ref.version}`, weight });
    }
    if (total !== 100)
      throw new SfnServiceError('ValidationException', 'routingConfiguration weights must add up to 100');
    return out;
  }

  private findAlias(aliasArn: unknown) {
    const ref = parseStateMachineArn(this.scope, aliasArn);
    const machine = this.registry.find(ref.name);
    const alias = machine?.aliases.find((a) => a.name === ref.alias);
    if (!machine || !alias)
      throw new SfnServiceError('ResourceNotFound', `Alias not found: '${String(aliasArn)}'`);
    return { machine, alias };
  }
}
