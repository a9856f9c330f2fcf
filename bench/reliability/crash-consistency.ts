/**
 * Crash consistency, measured: every named crash point killed at in the suite's own tests
 * (crash-points.ts), and random kill -9 under load (kills-under-load.ts), in rounds of seeds.
 */
import { crashPointTrials } from './crash-points.ts';
import { type KillsUnderLoad, killsUnderLoad } from './kills-under-load.ts';

export const CRASH_CONSISTENCY_GOAL =
  'crash consistency: every named crash point (gate, decision, submit, step, human step) held in every trial; under random kill -9 with plans under way, nothing acknowledged lost, no step run after its TASK_COMPLETED or completed twice, every gate decided once, audit verify clean';

export async function crashConsistency(seed: number, options: { rounds?: number; trials?: number } = {}) {
  const namedPoints = crashPointTrials(options.trials ?? 2);
  const underLoad: (KillsUnderLoad & { seed: number })[] = [];
  for (let round = 0; round < (options.rounds ?? 2); round++)
    underLoad.push({ seed: seed + round, ...(await killsUnderLoad({ seed: seed + round })) });
  const sum = (pick: (r: (typeof underLoad)[number]) => number) => underLoad.reduce((n, r) => n + pick(r), 0);
  return {
    namedPoints,
    underLoad: {
      rounds: underLoad,
      kills: sum((r) => r.kills),
      acknowledged: sum((r) => r.acknowledged),
      lost: sum((r) => r.lost.length),
      ranAfterCompleted: sum((r) => r.ranAfterCompleted.length),
      completedOtherThanOnce: sum((r) => r.completedOtherThanOnce.length),
      decidedOtherThanOnce: sum((r) => r.decidedOtherThanOnce.length),
    },
    held: namedPoints.held && underLoad.every((r) => r.held),
  };
}
