/**
 * The platform's policy: a directory of Cedar policies (`*.cedar`) and, optionally, the groups
 * file that says who belongs to which group (`groups.json`, `{"sre": ["alice@example.com"]}`).
 * Loaded once per process, validated against plangate's schema (schema.ts), every problem
 * located as `file:line:col`; then it answers each request with Cedar's decision and the ids of
 * the policies that made it.
 *
 * A policy's id is its `@id("…")` annotation, else `<file>:<line>`: what events, refusals and
 * `plangate policy explain` name.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { canonicalJson } from '../plan/digest.ts';
import { principalName } from '../plan/principal-names.ts';
import type { Problem } from '../plan/problems.ts';
import { POLICY_DIR_ENV } from '../runtime/catalog.ts';
import type { PolicyAction, PolicyOverride } from '../runtime/payloads/index.ts';
import { type Cedar, cedar, type DetailedError, type EntityJson } from './cedar.ts';
import type { PolicyEntity } from './entities.ts';
import { GROUPS_FILE, PEOPLE_FILE, policyFiles } from './policy-files.ts';
import { POLICY_SCHEMA } from './schema.ts';

/** Who asks: their name, and the groups the request itself proves (verified JWT claims). */
export interface PolicyPrincipal {
  readonly name: string;
  /** Groups the request carries from a verified source; the groups file adds its own. */
  readonly groups?: readonly string[];
}

export interface PolicyRequest {
  readonly principal: PolicyPrincipal;
  readonly action: PolicyAction;
  readonly resource: PolicyEntity;
  readonly context?: Readonly<Record<string, unknown>>;
  /** Other entities the resource names as parents (e.g. a step's plan). */
  readonly entities?: readonly PolicyEntity[];
}

/** How a decision's errors name a request that Cedar refused outright (it does not fit the schema). */
export const REQUEST_ERROR = 'request: ';

/**
 * What a deciding policy says of itself, from its annotations other than `@id`: its `@reason("…")`,
 * and any other (`@advice`, `@owner`, …) by name.
 */
export interface PolicyReason {
  readonly policy: string;
  readonly reason?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/**
 * How a forbid binds (its `@enforcement("…")` annotation): `hard-mandatory` (the default) denies;
 * `soft-mandatory` denies unless a member of its `@overrideBy("group")` overrides it with a
 * reason; `advisory` is evaluated and journaled but never denies. A permit is always hard.
 */
export const ENFORCEMENT_LEVELS = ['advisory', 'soft-mandatory', 'hard-mandatory'] as const;
export type EnforcementLevel = (typeof ENFORCEMENT_LEVELS)[number];

/** A soft-mandatory denial: the policies that would have to be overridden, and who may. */
export interface PolicyOverridable {
  readonly policies: readonly string[];
  /** Groups whose members may override (a member of each policy's group). */
  readonly by: readonly string[];
  /** The permits that allow the request once the soft forbids give way. */
  readonly permits: readonly string[];
}

export interface PolicyDecision {
  readonly decision: 'allow' | 'deny';
  /**
   * The level that decided a denial (`hard-mandatory`: a hard forbid, or nothing permits it;
   * `soft-mandatory`: only overridable forbids). Absent on an allow.
   */
  readonly level?: Exclude<EnforcementLevel, 'advisory'>;
  /** A soft-mandatory denial: what may be overridden, by whom. */
  readonly overridable?: PolicyOverridable;
  /** Advisory forbids that matched: they would have denied, and did not. */
  readonly advisory?: readonly string[];
  /** An allow given by overriding soft-mandatory forbids. */
  readonly overridden?: PolicyOverride;
  /** The policies that decided: the permits that allowed, or the forbids that denied (none: nothing permits it). */
  readonly determiningPolicies: readonly string[];
  /** What the deciding policies that are annotated say of themselves (absent: none is). */
  readonly reasons?: readonly PolicyReason[];
  /** Policies that could not be evaluated (they count as not applying), or why the request itself failed. */
  readonly errors: readonly string[];
}

/** A policy directory that does not load: its problems, each located. */
export class PolicyLoadError extends Error {
  constructor(
    readonly dir: string,
    readonly problems: readonly Problem[],
  ) {
    super(
      `${dir}: the policies do not load: ${problems
        .filter((p) => p.severity === 'error')
        .map((p) => `${p.location.file}:${p.location.line ?? 1}:${p.location.column ?? 1} ${p.message}`)
        .join('; ')}`,
    );
    this.name = 'PolicyLoadError';
  }
}

/**
 * The people file (`people.json`): each person (as approvers are named: an email) and the IAM
 * principals that are them, by exact ARN (an IAM user, or an assumed-role session such as an IAM
 * Identity Center one: `arn:aws:sts::<account>:assumed-role/AWSReservedSSO_<set>_<id>/<user>`).
 * A plan submitted through SigV4 by a listed principal is submitted by that person, so
 * "nobody approves their own plan" compares persons, not an ARN with an email.
 */
const PeopleFileSchema = z.record(
  z
    .string()
    .regex(
      /^[^\s"]{1,200}$/,
      'a person is named as approvers are: 1–200 characters without spaces or quotes',
    ),
  z.array(
    z
      .string()
      .regex(
        /^arn:aws[a-z-]*:(iam::\d{12}:user\/[^\s*]+|sts::\d{12}:assumed-role\/[^\s*/]+\/[^\s*/]+)$/,
        'an IAM user ARN or an assumed-role session ARN, exactly (no wildcards)',
      ),
  ),
);

const GroupsFileSchema = z.record(
  z.string().regex(/^[^\s"]{1,128}$/, 'a group name is 1–128 characters without spaces or quotes'),
  z.array(z.string().min(1)),
);

/** One policy as written: its id, the file and line it starts at, and its text. */
interface SourcePolicy {
  readonly id: string;
  readonly file: string;
  readonly line: number;
  /** Offset of `text` in its file. */
  readonly offset: number;
  readonly text: string;
  /** Its annotations but `@id`. */
  readonly annotations: Readonly<Record<string, string>>;
  readonly level: EnforcementLevel;
  /** soft-mandatory: the group whose members may override it. */
  readonly overrideBy?: string;
}

/** The result of reading a policy directory: the policies, the groups, and every problem found. */
export interface PolicyCheck {
  readonly dir: string;
  readonly policies: readonly { readonly id: string; readonly file: string; readonly line: number }[];
  readonly groups: Readonly<Record<string, readonly string[]>>;
  /** The people file: each person's IAM principals. */
  readonly people: Readonly<Record<string, readonly string[]>>;
  readonly problems: readonly Problem[];
}

/** The policy set plangate ships (policies/default): the default wherever no directory is given. */
export function defaultPolicyDir(): string {
  // A checkout (lib/policy), the built CLI (dist/lib/policy) and a Lambda bundle (policies/ beside it).
  for (const candidate of ['../../policies/default', '../../../policies/default', './policies/default']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(dir)) return dir;
  }
  throw new Error('the default policies (policies/default) are not installed beside plangate');
}

export { POLICY_DIR_ENV };

/**
 * The policy directory a process uses, the one answer for every process (serve, run, resume,
 * audit, the Lambdas, `plangate policy`): `--policy DIR` when given; else PLANGATE_POLICY_DIR,
 * relative to the Lambda's code (LAMBDA_TASK_ROOT) or the working directory; else the shipped set.
 */
export function policyDirOf(
  option: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string {
  if (option !== undefined) return path.resolve(option);
  const named = env[POLICY_DIR_ENV];
  return named ? path.resolve(env.LAMBDA_TASK_ROOT ?? process.cwd(), named) : defaultPolicyDir();
}

let instances = 0;
const loaded = new Map<string, Promise<PolicySet>>();

export class PolicySet {
  private constructor(
    private readonly wasm: Cedar,
    /** The directory the policies were read from. */
    readonly dir: string,
    private readonly policySetId: string,
    readonly policies: PolicyCheck['policies'],
    private readonly members: ReadonlyMap<string, readonly string[]>,
    /** IAM principal ARN → the person it is (the people file). */
    private readonly persons: ReadonlyMap<string, string>,
    /** What each annotated policy says of itself, by id. */
    private readonly reasonsById: ReadonlyMap<string, PolicyReason>,
    /**
     * What this set decides by, as one hash (`sha256:…`, {@link policySetDigest}): an execution is
     * pinned to it at submission and refused when the set in force has another.
     */
    readonly digest: string,
    /** The permits and hard-mandatory forbids alone (the whole set when every forbid is hard). */
    private readonly bindingSetId: string,
    /** The advisory and soft-mandatory forbids, by id. */
    private readonly yielding: ReadonlyMap<string, { level: EnforcementLevel; overrideBy?: string }>,
  ) {}

  /**
   * The policies of `dir` (the shipped default when undefined), read, validated and prepared once
   * per process. Throws {@link PolicyLoadError} with every problem located.
   */
  static load(dir: string = defaultPolicyDir()): Promise<PolicySet> {
    const resolved = path.resolve(dir);
    let set = loaded.get(resolved);
    if (!set) {
      set = PolicySet.read(resolved);
      loaded.set(resolved, set);
      // A directory that failed may be fixed and loaded again.
      set.catch(() => loaded.delete(resolved));
    }
    return set;
  }

  private static async read(dir: string): Promise<PolicySet> {
    const wasm = await cedar();
    const { check, sources } = checkSources(wasm, dir);
    if (check.problems.some((p) => p.severity === 'error')) throw new PolicyLoadError(dir, check.problems);
    const prepare = (policies: readonly SourcePolicy[]): string => {
      const id = `plangate-${++instances}`;
      const prepared = wasm.preparsePolicySet(id, {
        staticPolicies: Object.fromEntries(policies.map((p) => [p.id, p.text])),
      });
      if (prepared.type === 'failure')
        throw new PolicyLoadError(dir, [
          located(dir, 'cedar-parse', prepared.errors[0]?.message ?? 'failed'),
        ]);
      return id;
    };
    const policySetId = prepare(sources);
    // What binds without the forbids that can give way (advisory, soft-mandatory): asked first.
    const hard = sources.filter((p) => p.level === 'hard-mandatory');
    const bindingSetId = hard.length === sources.length ? policySetId : prepare(hard);
    const yielding = new Map(
      sources.flatMap((p): [string, { level: EnforcementLevel; overrideBy?: string }][] =>
        p.level === 'hard-mandatory'
          ? []
          : [[p.id, { level: p.level, ...(p.overrideBy !== undefined ? { overrideBy: p.overrideBy } : {}) }]],
      ),
    );
    preparedSchema(wasm);
    const members = new Map<string, string[]>();
    for (const [group, names] of Object.entries(check.groups))
      for (const listed of names) {
        const name = principalName(listed);
        members.set(name, [...(members.get(name) ?? []), group]);
      }
    const reasons = new Map(
      sources.flatMap((source): [string, PolicyReason][] => {
        const { reason, ...others } = source.annotations;
        if (reason === undefined && Object.keys(others).length === 0) return [];
        return [
          [
            source.id,
            {
              policy: source.id,
              ...(reason !== undefined ? { reason } : {}),
              ...(Object.keys(others).length > 0 ? { annotations: others } : {}),
            },
          ],
        ];
      }),
    );
    return new PolicySet(
      wasm,
      dir,
      policySetId,
      check.policies,
      members,
      new Map(
        Object.entries(check.people).flatMap(([person, arns]) =>
          arns.map((arn): [string, string] => [arn, principalName(person)]),
        ),
      ),
      reasons,
      policySetDigest(sources, check.groups, check.people),
      bindingSetId,
      yielding,
    );
  }

  /** The policies the environment names (PLANGATE_POLICY_DIR), else the shipped set. */
  static fromEnvironment(
    env: Readonly<Record<string, string | undefined>> = process.env,
  ): Promise<PolicySet> {
    return PolicySet.load(policyDirOf(undefined, env));
  }

  /** Reads and validates a directory without keeping it: what `plangate policy validate` reports. */
  static async check(dir: string): Promise<PolicyCheck> {
    return checkSources(await cedar(), path.resolve(dir)).check;
  }

  /** The person the people file says an IAM principal is, in canonical form; undefined when unlisted. */
  personOf(principalArn: string): string | undefined {
    return this.persons.get(principalArn);
  }

  /** The groups the groups file gives `name`, with the ones the request proved. */
  groupsOf(principal: PolicyPrincipal): string[] {
    const listed = this.members.get(principalName(principal.name)) ?? [];
    return [...new Set([...(principal.groups ?? []), ...listed])].sort();
  }

  /**
   * Cedar's answer to one request, with the enforcement levels applied: the binding policies
   * decide first (a hard forbid, or nothing permitting, denies); then the whole set, where
   * soft-mandatory forbids deny as overridable and advisory ones are only reported. A request
   * that does not fit the schema is denied, with why.
   */
  authorize(request: PolicyRequest): PolicyDecision {
    const binding = this.evaluate(request, this.bindingSetId);
    if (binding.decision === 'deny' || this.bindingSetId === this.policySetId)
      return binding.decision === 'deny' ? { ...binding, level: 'hard-mandatory' } : binding;
    const whole = this.evaluate(request, this.policySetId);
    if (whole.decision === 'allow') return binding;
    const matched = whole.determiningPolicies;
    const soft = matched.filter((id) => this.yielding.get(id)?.level === 'soft-mandatory');
    const advisory = matched.filter((id) => this.yielding.get(id)?.level === 'advisory');
    const errors = [...new Set([...binding.errors, ...whole.errors])];
    if (soft.length === 0) return { ...binding, errors, ...(advisory.length > 0 ? { advisory } : {}) };
    const reasons = soft.flatMap((id) => {
      const reason = this.reasonsById.get(id);
      return reason ? [reason] : [];
    });
    return {
      decision: 'deny',
      level: 'soft-mandatory',
      determiningPolicies: soft,
      ...(reasons.length > 0 ? { reasons } : {}),
      overridable: {
        policies: soft,
        by: [...new Set(soft.map((id) => this.yielding.get(id)?.overrideBy as string))].sort(),
        permits: binding.determiningPolicies,
      },
      ...(advisory.length > 0 ? { advisory } : {}),
      errors,
    };
  }

  /**
   * A soft-mandatory denial released by `principal` with `reason`: allowed when they belong to
   * the override group of every soft forbid that denied and give a reason. Anything else (a hard
   * denial, someone not in the group, no reason) is refused with why, and changes nothing.
   */
  override(decided: PolicyDecision, principal: PolicyPrincipal, reason: string): PolicyDecision | string {
    if (decided.decision === 'allow') return decided;
    if (decided.level !== 'soft-mandatory' || !decided.overridable)
      return 'a hard-mandatory policy denied it: it cannot be overridden';
    const why = overrideReasonProblem(reason);
    if (why) return why;
    const groups = this.groupsOf(principal);
    const missing = decided.overridable.policies.filter(
      (id) => !groups.includes(this.yielding.get(id)?.overrideBy as string),
    );
    if (missing.length > 0)
      return `${principalName(principal.name)} may not override ${missing.join(', ')}: members of ${[
        ...new Set(missing.map((id) => this.yielding.get(id)?.overrideBy)),
      ].join(', ')} may`;
    const { level: _level, overridable: _overridable, reasons: _reasons, ...rest } = decided;
    // What allows it now is the permits; the forbids it overrode are named in `overridden`.
    return {
      ...rest,
      decision: 'allow',
      determiningPolicies: [...decided.overridable.permits],
      overridden: {
        by: principalName(principal.name),
        reason: reason.trim(),
        policies: [...decided.overridable.policies],
      },
    };
  }

  /** The enforcement level of a policy of this set (`hard-mandatory` for any it does not hold). */
  levelOf(id: string): EnforcementLevel {
    return this.yielding.get(id)?.level ?? 'hard-mandatory';
  }

  private evaluate(request: PolicyRequest, policySetId: string): PolicyDecision {
    const groups = this.groupsOf(request.principal);
    // The canonical name, as every entity names people: `principal.name == resource.submitter` holds
    // however either was spelled.
    const name = principalName(request.principal.name);
    const principal: PolicyEntity = {
      type: 'User',
      id: name,
      attrs: { name },
      parents: groups.map((id) => ({ type: 'Group', id })),
    };
    const entities = [
      principal,
      ...groups.map((id): PolicyEntity => ({ type: 'Group', id, attrs: {} })),
      request.resource,
      ...(request.entities ?? []),
    ];
    const answer = this.wasm.statefulIsAuthorized({
      principal: { type: 'User', id: name },
      action: { type: 'Action', id: request.action },
      resource: { type: request.resource.type, id: request.resource.id },
      context: (request.context ?? {}) as Record<string, never>,
      preparsedPolicySetId: policySetId,
      preparsedSchemaName: SCHEMA_NAME,
      validateRequest: true,
      entities: entities.map(entityJson),
    });
    if (answer.type === 'failure')
      return {
        decision: 'deny',
        determiningPolicies: [],
        errors: answer.errors.map((e) => `${REQUEST_ERROR}${e.message}`),
      };
    const { decision, diagnostics } = answer.response;
    const determiningPolicies = [...diagnostics.reason].sort();
    const reasons = determiningPolicies.flatMap((id) => {
      const reason = this.reasonsById.get(id);
      return reason ? [reason] : [];
    });
    return {
      decision,
      determiningPolicies,
      ...(reasons.length > 0 ? { reasons } : {}),
      errors: diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`),
    };
  }
}

/** Why an override's reason is not one (empty, too long, control characters), or undefined. */
export function overrideReasonProblem(reason: string): string | undefined {
  const text = reason.trim();
  if (text.length === 0) return 'an override needs a reason: say why the rule gives way';
  if (text.length > 500) return 'an override reason is at most 500 characters';
  if (/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/u.test(text))
    return 'an override reason is one line of text: no control or bidirectional characters';
  return undefined;
}

/**
 * The hash of a policy set: canonical JSON of plangate's Cedar schema (its version), every policy
 * by id with its text (line ends normalized, trimmed), sorted by id, the groups file's content, and
 * the people file's when there is one.
 * Where a policy sits (file, line) does not change what it decides, so it is not part of it.
 */
export function policySetDigest(
  sources: readonly { readonly id: string; readonly text: string }[],
  groups: Readonly<Record<string, readonly string[]>>,
  people: Readonly<Record<string, readonly string[]>> = {},
): string {
  const policies = sources
    .map((p) => ({ id: p.id, text: p.text.replace(/\r\n?/g, '\n').trim() }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const text = canonicalJson({
    schema: POLICY_SCHEMA,
    policies,
    groups,
    ...(Object.keys(people).length > 0 ? { people } : {}),
  });
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

const SCHEMA_NAME = 'plangate';
let schemaPrepared = false;

/** The schema, parsed once per process for every request to be checked against. */
function preparedSchema(wasm: Cedar): void {
  if (schemaPrepared) return;
  const answer = wasm.preparseSchema(SCHEMA_NAME, POLICY_SCHEMA as never);
  if (answer.type === 'failure')
    throw new Error(`plangate's Cedar schema does not parse: ${answer.errors[0]?.message}`);
  schemaPrepared = true;
}

function entityJson(entity: PolicyEntity): EntityJson {
  return {
    uid: { type: entity.type, id: entity.id },
    attrs: entity.attrs as EntityJson['attrs'],
    parents: (entity.parents ?? []).map((p) => ({ type: p.type, id: p.id })),
    ...(entity.tags ? { tags: entity.tags } : {}),
  };
}

/** Every policy file of `dir` split into policies, parsed and validated; the groups file read. */
function checkSources(wasm: Cedar, dir: string): { check: PolicyCheck; sources: SourcePolicy[] } {
  const problems: Problem[] = [];
  const files = policyFiles(dir, problems);
  if (files.length === 0 && problems.length === 0)
    problems.push(located(dir, 'policy-dir', 'no .cedar files: a policy set needs at least one policy'));
  const sources: SourcePolicy[] = [];
  const texts = new Map<string, string>();
  for (const file of files) {
    const shown = path.join(dir, file);
    const text = readFileSync(shown, 'utf8');
    texts.set(shown, text);
    for (const chunk of splitPolicies(text)) {
      const parsed = wasm.policyToJson(chunk.text);
      if (parsed.type === 'failure') {
        for (const error of parsed.errors)
          problems.push(locatedIn(shown, text, chunk.offset, error, 'cedar-parse'));
        continue;
      }
      const line = lineOf(text, chunk.offset + firstCodeOffset(chunk.text));
      // A problem of this policy as a whole, located where its code starts.
      const atPolicy = (code: string, message: string): Problem => ({
        ...locatedIn(shown, text, chunk.offset + firstCodeOffset(chunk.text), undefined, code),
        message,
      });
      const { id: annotatedId, ...annotations } = parsed.json.annotations ?? {};
      const id = annotatedId ?? `${file}:${line}`;
      const earlier = sources.find((s) => s.id === id);
      if (earlier) {
        problems.push(
          atPolicy(
            'duplicate-policy-id',
            `policy id "${id}" is already used at ${earlier.file}:${earlier.line}`,
          ),
        );
        continue;
      }
      const binding = enforcementOf(parsed.json.effect, annotations);
      if (typeof binding === 'string') {
        problems.push(atPolicy('policy-enforcement', `policy "${id}": ${binding}`));
        continue;
      }
      sources.push({
        id,
        file: shown,
        line,
        offset: chunk.offset,
        text: chunk.text,
        annotations,
        ...binding,
      });
    }
  }
  if (sources.length > 0 && problems.length === 0) {
    const validation = wasm.validate({
      schema: POLICY_SCHEMA as never,
      policies: { staticPolicies: Object.fromEntries(sources.map((p) => [p.id, p.text])) },
      validationSettings: { mode: 'strict' },
    });
    if (validation.type === 'failure')
      for (const error of validation.errors) problems.push(located(dir, 'cedar-validation', error.message));
    else
      for (const [list, severity] of [
        [validation.validationErrors, 'error'],
        [validation.validationWarnings, 'warning'],
      ] as const)
        for (const { policyId, error } of list) {
          const source = sources.find((s) => s.id === policyId);
          const problem = source
            ? locatedIn(source.file, texts.get(source.file) ?? '', source.offset, error, 'cedar-validation')
            : located(dir, 'cedar-validation', error.message);
          problems.push({ ...problem, severity });
        }
  }
  const groups = readGroups(dir, problems);
  const people = readPeople(dir, problems);
  return {
    check: {
      dir,
      policies: sources.map(({ id, file, line }) => ({ id, file, line })),
      groups,
      people,
      problems,
    },
    sources,
  };
}

/**
 * A policy's level and override group from its annotations, or why they are wrong: a level
 * plangate does not know, a level on a permit (a permit that did not bind would allow what it
 * did not mean to), a soft-mandatory forbid nobody may override, an override group on a forbid
 * that is not soft-mandatory.
 */
function enforcementOf(
  effect: string,
  annotations: Readonly<Record<string, string>>,
): { level: EnforcementLevel; overrideBy?: string } | string {
  const { enforcement, overrideBy } = annotations;
  const level = enforcement ?? 'hard-mandatory';
  if (!(ENFORCEMENT_LEVELS as readonly string[]).includes(level))
    return `@enforcement("${level}") is not a level: use ${ENFORCEMENT_LEVELS.map((l) => `"${l}"`).join(', ')}`;
  if (effect !== 'forbid' && level !== 'hard-mandatory')
    return `@enforcement("${level}") applies to a forbid; a permit always binds`;
  if (level === 'soft-mandatory') {
    if (overrideBy === undefined || !/^[^\s"]{1,128}$/.test(overrideBy))
      return '@enforcement("soft-mandatory") needs @overrideBy("<group>"): the group whose members may override it with a reason';
    return { level, overrideBy };
  }
  if (overrideBy !== undefined) return `@overrideBy applies to a soft-mandatory forbid; this one is ${level}`;
  return { level: level as EnforcementLevel };
}

function readGroups(dir: string, problems: Problem[]): Record<string, string[]> {
  return readJsonFile(path.join(dir, GROUPS_FILE), GroupsFileSchema, 'groups-file', problems);
}

/** The people file; a principal listed for two persons is refused, located. */
function readPeople(dir: string, problems: Problem[]): Record<string, string[]> {
  const file = path.join(dir, PEOPLE_FILE);
  const people = readJsonFile(file, PeopleFileSchema, 'people-file', problems);
  const seen = new Map<string, string>();
  for (const [person, arns] of Object.entries(people))
    for (const [i, arn] of arns.entries()) {
      const first = seen.get(arn);
      if (first !== undefined && first !== person)
        problems.push({
          ...located(
            file,
            'people-file',
            `${arn} is listed for ${first} and for ${person}: a principal is one person`,
          ),
          location: { file, pointer: `/${person}/${i}` },
        });
      seen.set(arn, person);
    }
  return people;
}

function readJsonFile(
  file: string,
  schema: typeof GroupsFileSchema | typeof PeopleFileSchema,
  code: 'groups-file' | 'people-file',
  problems: Problem[],
): Record<string, string[]> {
  if (!existsSync(file)) return {};
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    problems.push(located(file, code, `not JSON: ${(error as Error).message}`));
    return {};
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    problems.push({
      ...located(file, code, `${issue.path.join('.') || code.replace('-file', '')}: ${issue.message}`),
      location: { file, pointer: `/${issue.path.join('/')}` },
    });
  return {};
}

/**
 * The policies of a file, each with its offset: text up to each `;` outside strings and comments.
 * Text after the last `;` that is more than comments is returned too, for the parser to refuse.
 */
export function splitPolicies(text: string): { offset: number; text: string }[] {
  const chunks: { offset: number; text: string }[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (ch === '"') {
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
    } else if (ch === ';') {
      chunks.push({ offset: start, text: text.slice(start, i + 1) });
      start = i + 1;
      i++;
    } else i++;
  }
  const rest = text.slice(start);
  if (firstCodeOffset(rest) < rest.length) chunks.push({ offset: start, text: rest });
  return chunks;
}

/** Where the code of a chunk starts: after blank space and `//` comments. */
function firstCodeOffset(text: string): number {
  let i = 0;
  for (;;) {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
    if (text.startsWith('//', i)) {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    return i;
  }
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text[i] === '\n') line++;
  return line;
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf('\n', offset - 1) + 1) + 1;
}

/** A Cedar error located in its file: the chunk's offset plus the error's own, as line and column. */
function locatedIn(
  file: string,
  text: string,
  chunkOffset: number,
  error: DetailedError | undefined,
  code: string,
): Problem {
  const at = chunkOffset + (error?.sourceLocations?.[0]?.start ?? firstCodeOffset(text.slice(chunkOffset)));
  const label = error?.sourceLocations?.[0]?.label;
  const help = error?.help ? ` (${error.help})` : '';
  return {
    severity: 'error',
    code,
    message: `${error?.message ?? ''}${label ? `: ${label}` : ''}${help}`,
    location: { file, line: lineOf(text, at), column: columnOf(text, at) },
  };
}

function located(file: string, code: string, message: string): Problem {
  return { severity: 'error', code, message, location: { file } };
}
