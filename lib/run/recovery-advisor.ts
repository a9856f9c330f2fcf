/**
 * Seed 001's third recovery strategy in a local run with a planner: the gate Lambda's recovery
 * advisor reads the plan from the store, asks the model (lib/planner/recovery.ts), and keeps the
 * new version a revising suggestion makes in the store, by digest, so the run can send it to the
 * gate if the person accepts it. Accepting is an answer at the escalation, from the terminal or
 * the page, which ends this execution for the new version.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Plan, PlanSchema } from '../plan/schema.ts';
import type { PlannerProvider } from '../planner/provider.ts';
import { adviseRecovery } from '../planner/recovery.ts';
import type { AnswerReviser } from '../runtime/api/approvals-api.ts';
import { ACCEPT_SUGGESTION, type RecoveryAdvice, type RecoveryAdvisor } from '../runtime/payloads/index.ts';
import { planFile, type StorePaths } from '../serve/store-directory.ts';

/** The run's planner, as its escalations ask it. */
export interface RecoveryPlanner {
  readonly provider: PlannerProvider;
  /** Report the new version's commands that are not valid shell. @default true */
  readonly checkShell?: boolean;
}

export function localRecoveryAdvisor(paths: StorePaths, planner: RecoveryPlanner): RecoveryAdvisor {
  const { provider } = planner;
  return async (request) => {
    const plan = await storedPlan(paths, request.plan.digest);
    if (!plan)
      return {
        refused: `the plan ${request.plan.digest} is not in ${paths.root}`,
        provider: provider.name,
        model: provider.model,
      };
    const advised = await adviseRecovery({
      provider,
      plan,
      request,
      checkShell: planner.checkShell,
    });
    if ('refused' in advised) return advised;
    if (advised.revised) {
      const file = planFile(paths, advised.revised.digest);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, `${JSON.stringify(advised.revised.plan)}\n`);
    }
    return advised.advice;
  };
}

/** A plan the store keeps, by digest (`sha256:<hex>` or hex); undefined when it holds none. */
export async function storedPlan(paths: StorePaths, digest: string): Promise<Plan | undefined> {
  try {
    return PlanSchema.parse(
      JSON.parse(await readFile(planFile(paths, digest.replace(/^sha256:/, '')), 'utf8')),
    );
  } catch {
    return undefined;
  }
}

/**
 * Accepting a suggestion that changes the plan, wherever the person answers: this execution ends
 * (ABORT, saying by which version) and `onRevision` is told, once it is recorded, to send the new
 * version to the gate.
 */
export function recoveryRevisionReviser(onRevision: (advice: RecoveryAdvice) => void): AnswerReviser {
  return (gate, decision) => {
    const advice = gate.kind === 'escalation' ? gate.recovery : undefined;
    if (decision.decision !== ACCEPT_SUGGESTION || !advice?.revision) return undefined;
    const { version, digest } = advice.revision;
    return {
      decision: {
        decision: 'ABORT',
        reason: `replaced by ${gate.planId} v${version} (${digest}): the model's suggestion (${advice.suggestion.strategy}), accepted`,
        acceptSuggestion: true,
      },
      note: `This run ends; version ${version} of the plan, with the model's change, comes to the gate.`,
      onRecorded: () => onRevision(advice),
    };
  };
}
