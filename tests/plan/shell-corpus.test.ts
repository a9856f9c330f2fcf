// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * Every command of the shared corpus placed everywhere a plan holds a command: a step's args, its
 * contract, its rollback, the rollback's contract and a postcondition. A destructive one is marked by planRisks in each
 * place and refused by the validator with a located problem, except as a rollback (rollbacks undo
 * things: marked, not refused); an ordinary one is neither marked nor refused anywhere, unless
 * it leaves a process running after it ends (refused as such, wherever it stands).
 */
import { describe, expect, it } from 'vitest';
import { DESTRUCTIVE_COMMANDS, HARMLESS_COMMANDS } from '../../bench/reliability/shell-corpus.ts';
import { planRisks } from '../../lib/plan/risks.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { analyzeShell } from '../../lib/plan/shell/index.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

type Place = 'step' | 'contract' | 'rollback' | 'rollbackContract' | 'postcondition';
const PLACES: readonly Place[] = ['step', 'contract', 'rollback', 'rollbackContract', 'postcondition'];
const TARGET = 3;

/** A valid plan whose step `target` (index 3) or postcondition holds `command` at `place`. */
function planWith(command: string, place: Place, requiresApproval = false): Plan {
  const echo = (id: string, output: string) => ({
    id,
    description: `Produce ${output}`,
    tool: 'echo',
    args: { message: id },
    outputs: [output],
    contract: { kind: 'assert', expression: 'true' },
  });
  const target: Record<string, unknown> = {
    id: 'target',
    description: 'The step under test',
    dependsOn: ['plan', 'build', 'pick-version'],
    tool: 'shell',
    args: { command: place === 'step' ? command : 'echo ok' },
    contract: { kind: 'command', command: place === 'contract' ? command : 'test -f out.txt' },
    requiresApproval,
  };
  if (place === 'rollback') target.rollback = { tool: 'shell', args: { command } };
  if (place === 'rollbackContract')
    target.rollback = {
      tool: 'shell',
      args: { command: 'echo undo' },
      contract: { kind: 'command', command },
    };
  return PlanSchema.parse({
    id: 'corpus',
    objective: 'Hold one command of the corpus',
    context: { workDir: '/tmp/corpus' },
    steps: [echo('plan', 'tool'), echo('build', 'artifact'), echo('pick-version', 'version'), target],
    postconditions: [
      {
        id: 'done',
        description: 'The work is done',
        contract: { kind: 'command', command: place === 'postcondition' ? command : 'test -f out.txt' },
      },
    ],
  });
}

const POINTERS: Record<Place, string> = {
  step: `/steps/${TARGET}/args/command`,
  contract: `/steps/${TARGET}/contract/command`,
  rollback: `/steps/${TARGET}/rollback/args/command`,
  rollbackContract: `/steps/${TARGET}/rollback/contract/command`,
  postcondition: '/postconditions/0/contract/command',
};

function marks(plan: Plan, place: Place): readonly string[] {
  const risks = planRisks(plan);
  if (place === 'postcondition') return risks.postconditions.done ?? [];
  const step = risks.steps.target!;
  const byPlace = { step: step.destructive, contract: step.contract, rollback: step.rollback };
  return place === 'rollbackContract' ? step.rollbackContract : byPlace[place];
}

describe('destructive commands, in every place a command stands', () => {
  it.each(DESTRUCTIVE_COMMANDS.map((s) => [s.shows, s.command] as const))('%s', async (_, command) => {
    const unreadable = analyzeShell(command).syntaxError !== undefined;
    for (const place of PLACES) {
      const plan = planWith(command, place);
      expect(marks(plan, place).length, `${place}: marked`).toBeGreaterThan(0);
      const problems = (await validatePlan(plan)).problems.map((p) => [p.code, p.location.pointer]);
      // Text that does not parse is refused as such, wherever it stands.
      if (unreadable) expect(problems, place).toContainEqual(['invalid-shell', POINTERS[place]]);
      else if (place === 'step')
        expect(problems, place).toContainEqual([
          'destructive-without-approval',
          `/steps/${TARGET}/requiresApproval`,
        ]);
      else if (place === 'rollback')
        // A destructive rollback is allowed; a value where it would choose what runs is not, anywhere.
        expect(
          problems.filter(
            ([code, p]) =>
              p?.includes('/rollback') && code !== 'unsafe-reference' && code !== 'background-process',
          ),
          place,
        ).toEqual([]);
      else expect(problems, place).toContainEqual(['destructive-contract', POINTERS[place]]);
    }
    if (!unreadable) {
      const gated = (await validatePlan(planWith(command, 'step', true))).problems;
      expect(gated.filter((p) => p.code.startsWith('destructive'))).toEqual([]);
    }
  });
});

describe('ordinary commands, in every place a command stands', () => {
  it.each(HARMLESS_COMMANDS)('%s', async (command) => {
    for (const place of PLACES) {
      const plan = planWith(command, place);
      expect(marks(plan, place), place).toEqual([]);
      // One that leaves a process running is refused for that alone (tests/plan/function-limits.test.ts).
      const outlives = analyzeShell(command).background.length > 0;
      const problems = (await validatePlan(plan)).problems;
      expect(
        problems.map((p) => [p.code, p.location.pointer]),
        place,
      ).toEqual(outlives ? [['background-process', POINTERS[place]]] : []);
    }
  });
});
