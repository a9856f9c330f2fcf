/**
 * A modification is a plan: approving with modifications applies them to the gated steps, and
 * what results is judged as a submitted plan is before it may become a revision. Each modified
 * step, with its args as the revision runs them (its recorded args, the overrides on top, as the
 * step runner merges them), is checked by the plan validator (lib/plan/validate.ts: the tool's
 * strict input schema, references, shell analysis and every other rule there), by the risk
 * analysis (a destructive call needs the step's own gate, revised-view.ts) and by the platform's
 * policy, which is asked SubmitPlan about the revised plan's facts. Every problem is returned,
 * located at a JSON pointer into the answer (`/argOverrides/<step>/<arg>`, shown as
 * `decision.argOverrides.<step>.<arg>`); none means the modification may be made.
 */
import { referencesInValue } from '../../plan/references.ts';
import { PlanSchema } from '../../plan/schema.ts';
import { pointerOf } from '../../plan/source-map.ts';
import { validatePlan } from '../../plan/validate.ts';
import { callFacts, planEntity } from '../../policy/entities.ts';
import type { PolicyPrincipal, PolicyRequest, PolicySet } from '../../policy/policy-set.ts';
import type { GateRevision, PlanFacts, PlanIdentity, RecordedStep, StepView } from '../payloads/index.ts';
import { ApprovalError } from './links.ts';
import { argsWithOverrides } from './modifications.ts';
import { revisionRiskProblem } from './revised-view.ts';

/** One reason a modification is refused, at the answer's field it is about. */
export interface ModificationProblem {
  /** The validator's code, or `modification-reference`, `modification-skip`, `destructive-without-approval`, `policy-denied`. */
  readonly code: string;
  /** JSON pointer into the answer, e.g. `/argOverrides/write/env/BASH_ENV`. */
  readonly pointer: string;
  readonly message: string;
}

/** A problem's field as people read it: `decision.argOverrides.write.env.BASH_ENV`. */
export function problemField(problem: Pick<ModificationProblem, 'pointer'>): string {
  return `decision${problem.pointer
    .split('/')
    .slice(1)
    .map((p) => `.${p.replaceAll('~1', '/').replaceAll('~0', '~')}`)
    .join('')}`;
}

/**
 * A modification refused because the plan it makes is not one a submission could be: every
 * problem, each at the answer's field it is about. Nothing changed.
 */
export class ModificationRefusedError extends ApprovalError {
  constructor(readonly problems: readonly ModificationProblem[]) {
    super('invalid', problems.map((p) => `${problemField(p)}: ${p.message}`).join('; '));
  }
}

/** What a gate knows of the content a modification changes. */
export interface ModifiableContent {
  readonly kind: 'plan' | 'step';
  /** The steps the gate shows (a plan gate's view, or a step gate's step), as compiled. */
  readonly steps: readonly StepView[];
  /** What PLAN_CREATED recorded of each step: its exact args, where they were short enough to record whole. */
  readonly recorded?: Readonly<Record<string, RecordedStep>>;
  /** The modifications made so far (the gate's current revision): a new one adds to them. */
  readonly current?: Pick<GateRevision, 'skipSteps' | 'argOverrides'>;
}

/** A modification: steps not to run, and new arg values by step id. */
export interface Modification {
  readonly skipSteps: readonly string[];
  readonly argOverrides: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** The args a step runs with under a revision: its own (as recorded, else as shown), the overrides on top. */
export function revisedArgs(
  step: StepView,
  overrides: Readonly<Record<string, unknown>>,
  recorded?: RecordedStep,
): Record<string, unknown> {
  return { ...baseArgs(step, recorded), ...overrides };
}

/**
 * Every problem of `modification` applied to `content`, after the modifications made so far.
 * Skipping is a plan gate's (a step gate's step is rejected instead); every arg override is
 * validated as the plan it makes.
 */
export async function modificationProblems(
  content: ModifiableContent,
  modification: Modification,
): Promise<ModificationProblem[]> {
  const problems: ModificationProblem[] = [];
  if (content.kind === 'step')
    for (const id of modification.skipSteps)
      problems.push({
        code: 'modification-skip',
        pointer: '/skipSteps',
        message: `"${id}": a step gate cannot skip its step; reject it instead (it is then skipped)`,
      });
  for (const [id, given] of Object.entries(modification.argOverrides)) {
    const step = content.steps.find((s) => s.id === id);
    if (!step) continue;
    const overrides = { ...content.current?.argOverrides[id], ...given };
    problems.push(...(await stepProblems(step, overrides, content.recorded?.[id], content.kind)));
  }
  return problems;
}

/**
 * What the platform's policy is asked about the revised plan, as its submission was: SubmitPlan
 * by the plan's submitter, with the facts of the revised steps' calls (context `channel: gate`,
 * `solo` as launched).
 */
export function revisionPolicyRequest(
  plan: PlanIdentity,
  facts: PlanFacts,
  submitter: string | undefined,
  revised: Readonly<Record<string, RevisedCall>>,
  solo: boolean,
): PolicyRequest {
  return {
    principal: { name: submitter ?? '' } satisfies PolicyPrincipal,
    action: 'SubmitPlan',
    resource: planEntity(plan, revisedFacts(facts, revised), submitter),
    context: { channel: 'gate', solo },
  };
}

/** The plan's facts with the revised steps' calls judged again (their hosts and destructive marks). */
export function revisedFacts(facts: PlanFacts, revised: Readonly<Record<string, RevisedCall>>): PlanFacts {
  const steps = { ...facts.steps };
  for (const [id, call] of Object.entries(revised))
    steps[id] = callFacts(
      {
        tool: call.tool,
        target: steps[id]?.target,
        args: call.args,
        networkHosts: steps[id]?.networkHosts ?? [],
      },
      call.ownGate,
    );
  const hosts = [...new Set([...facts.hosts, ...Object.values(steps).flatMap((s) => s.hosts)])].sort();
  return { ...facts, steps, hosts };
}

/** A modified step's call as the revision makes it, and whether the step has its own gate. */
export interface RevisedCall {
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly ownGate: boolean;
}

/** What a revision asks the policy about: each modified step's tool and revised args. */
export function revisedCalls(
  content: Pick<ModifiableContent, 'steps' | 'recorded'>,
  argOverrides: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
): Record<string, RevisedCall> {
  const calls: Record<string, RevisedCall> = {};
  for (const [id, overrides] of Object.entries(argOverrides)) {
    const step = content.steps.find((s) => s.id === id);
    if (step)
      calls[id] = {
        tool: step.tool,
        args: revisedArgs(step, overrides, content.recorded?.[id]),
        ownGate: step.risks.ownGate,
      };
  }
  return calls;
}

/** Policy refusals of a revision, one per modified step, naming the policies that decided. */
export function policyProblems(
  request: PolicyRequest,
  policy: PolicySet,
  modified: readonly string[],
): { problems: ModificationProblem[]; decided: ReturnType<PolicySet['authorize']> } {
  const decided = policy.authorize(request);
  if (decided.decision === 'allow') return { problems: [], decided };
  const rules = decided.determiningPolicies;
  const message = `the platform's policy would not accept the plan so modified (${rules.length > 0 ? `policy ${rules.join(', ')}` : 'no policy permits it'})`;
  return {
    problems: modified.map((id) => ({
      code: 'policy-denied',
      pointer: pointerOf(['argOverrides', id]),
      message,
    })),
    decided,
  };
}

/** The validator's codes about a `${…}` reference that does not resolve. */
const REFERENCE_CODES = new Set([
  'bad-reference',
  'unknown-reference',
  'undeclared-output',
  'reference-not-upstream',
  'unknown-context-key',
  'undeclared-secret',
]);

async function stepProblems(
  step: StepView,
  overrides: Readonly<Record<string, unknown>>,
  recorded: RecordedStep | undefined,
  kind: 'plan' | 'step',
): Promise<ModificationProblem[]> {
  const at = pointerOf(['argOverrides', step.id]);
  const problems: ModificationProblem[] = [];
  if (step.tool === 'agent')
    return [
      {
        code: 'invalid-args',
        pointer: at,
        message: `"${step.id}" is an agent's step: its task is not an argument to change`,
      },
    ];
  const base = baseArgs(step, recorded);
  const args = { ...base, ...overrides };
  // The compiled step reads only the values its own call references: a new one would not be there.
  const known = new Set(referencesInValue(base).map((r) => r.raw));
  const added = new Set<string>();
  for (const ref of referencesInValue(overrides))
    if (!known.has(ref.raw)) {
      added.add(ref.raw);
      problems.push({
        code: 'modification-reference',
        pointer: `${at}${ref.pointer}`,
        message: `${ref.raw}: the step's call does not use it, so its value would not be there when it runs; a modification may use only the references its step already uses (submit a new version of the plan to add one)`,
      });
    }
  const validation = await validatePlan(revisedPlan(step, args, base), {
    missingContract: 'off',
    vagueSteps: 'off',
  });
  const args0 = '/steps/0/args';
  for (const problem of validation.problems) {
    const pointer = problem.location.pointer ?? '';
    if (problem.severity !== 'error' || !(pointer === args0 || pointer.startsWith(`${args0}/`))) continue;
    if (REFERENCE_CODES.has(problem.code) && [...added].some((raw) => problem.message.startsWith(raw)))
      continue;
    problems.push({
      code: problem.code,
      pointer: `${at}${pointer.slice(args0.length)}`,
      message: problem.message,
    });
  }
  // A step gate is its step's own gate; at a plan gate, a destructive call needs one. A command
  // that does not parse is reported as such, not as destructive too (as the validator does).
  const unreadable = problems.some((p) => p.code === 'invalid-shell');
  const risk = kind === 'plan' && !unreadable ? revisionRiskProblem(step, args) : undefined;
  if (risk) problems.push({ code: 'destructive-without-approval', pointer: at, message: risk });
  return problems;
}

/**
 * The revised step as a plan of its own, for the validator: the step with its revised args, and
 * what its references need to resolve as they did at submission (the steps, context keys and
 * secrets its own call uses). Problems outside its args are not the modification's.
 */
function revisedPlan(step: StepView, args: Record<string, unknown>, base: Record<string, unknown>) {
  const refs = referencesInValue(base).filter((r) => !r.malformed);
  const upstream = new Map<string, Set<string>>();
  for (const ref of refs)
    if (ref.namespace === 'steps' && ref.field !== undefined && ref.name !== step.id)
      upstream.set(ref.name, (upstream.get(ref.name) ?? new Set()).add(ref.field));
  const secrets = new Set(refs.filter((r) => r.namespace === 'secrets').map((r) => r.name));
  const context = refs.filter((r) => r.namespace === 'context').map((r) => [r.name, ''] as const);
  return PlanSchema.parse({
    id: 'modification',
    objective: 'the modified step',
    sizePolicy: { minSteps: 1, maxSteps: upstream.size + 1 },
    context: Object.fromEntries(context),
    secrets: [...secrets].map((name) => ({ name, source: 'env', ref: name })),
    steps: [
      {
        id: step.id,
        description: step.description || step.id,
        tool: step.tool,
        args,
        dependsOn: [...upstream.keys()],
        requiresApproval: true,
        outputs: step.outputs,
      },
      ...[...upstream].map(([id, outputs]) => ({
        id,
        description: id,
        tool: 'echo',
        args: { message: id },
        outputs: [...outputs],
      })),
    ],
  });
}

/** The step's args as recorded whole (canonical JSON, not shortened), else as its view shows them. */
function baseArgs(step: StepView, recorded: RecordedStep | undefined): Record<string, unknown> {
  if (recorded && recorded.tool === step.tool) {
    try {
      const args: unknown = JSON.parse(recorded.args);
      if (args !== null && typeof args === 'object' && !Array.isArray(args))
        return args as Record<string, unknown>;
    } catch {
      // Shortened to fit the journal: what the view shows is what is known.
    }
  }
  return argsWithOverrides(step, {});
}
