/**
 * The corpus (shell-corpus.ts) by class, as the gate marks it (planRisks), in every place a plan
 * holds a command (a step's call, its contract, its rollback, the rollback's contract, a
 * postcondition): how many unknown forms are marked unknown or destructive everywhere, how many
 * outbound flows are marked exfiltration everywhere, and which read-only commands carry any mark.
 * The destructive commands are counted through the CLI by destructive-commands.ts.
 */
import { planRisks } from '../../lib/plan/risks.ts';
import { type Plan, PlanSchema } from '../../lib/plan/schema.ts';
import { EXFILTRATION_COMMANDS, READ_ONLY_COMMANDS, UNKNOWN_COMMANDS } from './shell-corpus.ts';

export interface ClassFigures {
  readonly commands: number;
  /** Marked as their class requires in every place. */
  readonly classed: number;
  /** `command` for each miss. */
  readonly missed: string[];
}

export interface CorpusClasses {
  /** Unknown forms: marked unknown or destructive everywhere (never read-only). */
  readonly unknown: ClassFigures;
  /** Outbound flows: marked exfiltration everywhere. */
  readonly exfiltration: ClassFigures;
  /** Read-only commands: no destructive, unknown or exfiltration mark anywhere. */
  readonly readOnly: { readonly commands: number; readonly flagged: string[] };
}

const CHECK_PLACES = /^(?:contract|rollback|rollback contract): /;

/** One plan holding command k in step k's call, contract, rollback and rollback contract, and in postcondition k. */
function planOf(commands: readonly string[]): Plan {
  const providers = [
    ['plan', 'tool'],
    ['build', 'artifact'],
    ['pick-version', 'version'],
  ].map(([id, output]) => ({
    id,
    description: `Produce ${output}`,
    tool: 'echo',
    args: { message: id },
    outputs: [output],
    contract: { kind: 'assert', expression: 'true' },
  }));
  return PlanSchema.parse({
    id: 'corpus-classes',
    objective: 'Hold every command in every place',
    sizePolicy: { maxSteps: commands.length + providers.length },
    steps: [
      ...providers,
      ...commands.map((command, k) => ({
        id: `c${k}`,
        description: `Hold command ${k}`,
        dependsOn: providers.map((p) => p.id),
        tool: 'shell',
        args: { command },
        contract: { kind: 'command', command },
        rollback: { tool: 'shell', args: { command }, contract: { kind: 'command', command } },
      })),
    ],
    postconditions: commands.map((command, k) => ({
      id: `p${k}`,
      description: `Check ${k}`,
      contract: { kind: 'command', command },
    })),
  });
}

/** Marks of command k per place: [destructive, unknown, exfiltration] counts. */
function marksByPlace(risks: ReturnType<typeof planRisks>, k: number): [number, number, number][] {
  const step = risks.steps[`c${k}`];
  if (!step) return [];
  const at = (reasons: readonly string[], place: string) =>
    reasons.filter((r) => (place === '' ? !CHECK_PLACES.test(r) : r.startsWith(place))).length;
  const post = risks.postconditionMarks[`p${k}`];
  return [
    [step.destructive.length, at(step.unknown, ''), at(step.exfiltration, '')],
    [step.contract.length, at(step.unknown, 'contract: '), at(step.exfiltration, 'contract: ')],
    [step.rollback.length, at(step.unknown, 'rollback: '), at(step.exfiltration, 'rollback: ')],
    [
      step.rollbackContract.length,
      at(step.unknown, 'rollback contract: '),
      at(step.exfiltration, 'rollback contract: '),
    ],
    [risks.postconditions[`p${k}`]?.length ?? 0, post?.unknown.length ?? 0, post?.exfiltration.length ?? 0],
  ];
}

function figures(
  commands: readonly string[],
  ok: (marks: [number, number, number]) => boolean,
): ClassFigures {
  const risks = planRisks(planOf(commands));
  const missed = commands.filter((_, k) => !marksByPlace(risks, k).every(ok));
  return { commands: commands.length, classed: commands.length - missed.length, missed };
}

export function corpusClasses(): CorpusClasses {
  const readOnly = figures(READ_ONLY_COMMANDS, ([d, u, x]) => d + u + x === 0);
  return {
    unknown: figures(
      UNKNOWN_COMMANDS.map((s) => s.command),
      ([d, u]) => d + u > 0,
    ),
    exfiltration: figures(
      EXFILTRATION_COMMANDS.map((s) => s.command),
      ([, , x]) => x > 0,
    ),
    readOnly: { commands: readOnly.commands, flagged: readOnly.missed },
  };
}
