/**
 * What changed between two versions of a plan, step by step, from their gates' sketches (the
 * compiler's plan graph): steps added, removed, and changed in name, tool, args, contract,
 * dependencies or other settings, with the old and new args and contract where each version's
 * PLAN_CREATED recorded them. Plain data, so the gate stores it and any page shows it.
 */
import type { RecordedStep, StepSketch } from '../payloads/index.ts';

/**
 * A value that changed: the old and the new one (canonical JSON, shortened) where both versions'
 * PLAN_CREATED recorded them; without them, only that it changed.
 */
export interface ValueChange {
  readonly from?: string;
  readonly to?: string;
}

/** One step present in both versions that is not the same. */
export interface StepChange {
  readonly id: string;
  /** The step's name in the new version. */
  readonly name: string;
  readonly renamed?: { readonly from: string; readonly to: string };
  readonly tool?: { readonly from: string; readonly to: string };
  /** What the tool is given changed. */
  readonly args?: ValueChange;
  readonly contract?: ValueChange & { readonly change: 'added' | 'removed' | 'changed' };
  readonly dependsOn?: { readonly added: readonly string[]; readonly removed: readonly string[] };
  /** Anything else of the step (approval, retries, timeout, outputs, rollback, …). */
  readonly settings?: true;
}

/** The changes of a plan since an earlier version that was gated. */
export interface PlanChanges {
  /** The version compared with. */
  readonly since: { readonly version: number; readonly digest: string };
  readonly added: readonly Pick<StepSketch, 'id' | 'name'>[];
  readonly removed: readonly Pick<StepSketch, 'id' | 'name'>[];
  /** In the new version's step order. */
  readonly changed: readonly StepChange[];
}

/** Each step's recorded values (PLAN_CREATED's `steps`), by step id. */
export type RecordedSteps = Readonly<Record<string, RecordedStep>>;

/**
 * The changes from `previous` to `current`, told by their fingerprints; with each version's
 * recorded steps, a changed value is shown old → new.
 */
export function diffPlanGraphs(
  since: PlanChanges['since'],
  previous: readonly StepSketch[],
  current: readonly StepSketch[],
  recorded: { readonly previous?: RecordedSteps; readonly current?: RecordedSteps } = {},
): PlanChanges {
  const before = new Map(previous.map((step) => [step.id, step]));
  const now = new Set(current.map((step) => step.id));
  const added: Pick<StepSketch, 'id' | 'name'>[] = [];
  const changed: StepChange[] = [];
  for (const step of current) {
    const old = before.get(step.id);
    if (!old) added.push({ id: step.id, name: step.name });
    else {
      const change = stepChange(old, step, recorded.previous?.[step.id], recorded.current?.[step.id]);
      if (change) changed.push(change);
    }
  }
  const removed = previous.filter((step) => !now.has(step.id)).map(({ id, name }) => ({ id, name }));
  return { since, added, removed, changed };
}

function stepChange(
  old: StepSketch,
  step: StepSketch,
  oldValues: RecordedStep | undefined,
  newValues: RecordedStep | undefined,
): StepChange | undefined {
  const oldDeps = old.dependsOn ?? [];
  const newDeps = step.dependsOn ?? [];
  const depsAdded = newDeps.filter((id) => !oldDeps.includes(id));
  const depsRemoved = oldDeps.filter((id) => !newDeps.includes(id));
  const contract =
    old.contract === step.contract
      ? undefined
      : old.contract === undefined
        ? 'added'
        : step.contract === undefined
          ? 'removed'
          : 'changed';
  const change: StepChange = {
    id: step.id,
    name: step.name,
    ...(old.name !== step.name ? { renamed: { from: old.name, to: step.name } } : {}),
    ...(old.tool !== step.tool ? { tool: { from: old.tool, to: step.tool } } : {}),
    ...(old.args !== step.args ? { args: valueChange(oldValues?.args, newValues?.args) } : {}),
    ...(contract
      ? { contract: { change: contract, ...valueChange(oldValues?.contract, newValues?.contract) } }
      : {}),
    ...(depsAdded.length + depsRemoved.length > 0
      ? { dependsOn: { added: depsAdded, removed: depsRemoved } }
      : {}),
    ...(old.settings !== step.settings ? { settings: true } : {}),
  };
  return Object.keys(change).length > 2 ? change : undefined;
}

function valueChange(from: string | undefined, to: string | undefined): ValueChange {
  return { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
}
