// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * The three classes over the whole corpus, as `npm run reliability` counts them but without the
 * CLI: every destructive command classed destructive, every unknown form unknown (or destructive),
 * every outbound flow marked exfiltration, every read-only command proven read-only with no mark,
 * and no ordinary command destructive. Then the same read through planRisks in every place a plan
 * holds a command, so the gate's marks agree.
 */
import { describe, expect, it } from 'vitest';
import {
  DESTRUCTIVE_COMMANDS,
  EXFILTRATION_COMMANDS,
  HARMLESS_COMMANDS,
  READ_ONLY_COMMANDS,
  UNKNOWN_COMMANDS,
} from '../../bench/reliability/shell-corpus.ts';
import { planRisks } from '../../lib/plan/risks.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { analyzeShell, type ShellAnalysis } from '../../lib/plan/shell/index.ts';

const reasons = (analysis: ShellAnalysis) =>
  [...analysis.destructive, ...analysis.unknown, ...analysis.exfiltration].map((f) => f.reason);

describe('the corpus, classed', () => {
  it('covers every form the issue names, and more', () => {
    expect(DESTRUCTIVE_COMMANDS.length).toBeGreaterThanOrEqual(200);
    expect(UNKNOWN_COMMANDS.length).toBeGreaterThanOrEqual(50);
    expect(EXFILTRATION_COMMANDS.length).toBeGreaterThanOrEqual(20);
    expect(READ_ONLY_COMMANDS.length).toBeGreaterThanOrEqual(70);
  });

  it('classes every destructive command destructive, for its reason', () => {
    const missed = DESTRUCTIVE_COMMANDS.filter((s) => {
      const analysis = analyzeShell(s.command);
      return (
        analysis.effect !== 'destructive' || !analysis.destructive.some((f) => f.reason.includes(s.reason))
      );
    }).map((s) => `${s.shows}: ${s.command} → ${reasons(analyzeShell(s.command)).join(' | ')}`);
    expect(missed).toEqual([]);
  });

  it('classes every unknown form unknown or destructive, never read-only', () => {
    const missed = UNKNOWN_COMMANDS.filter((s) => {
      const analysis = analyzeShell(s.command);
      return analysis.effect === 'read-only' || !reasons(analysis).some((r) => r.includes(s.reason));
    }).map((s) => `${s.shows}: ${s.command} → ${reasons(analyzeShell(s.command)).join(' | ')}`);
    expect(missed).toEqual([]);
  });

  it('marks every outbound flow and credential read as exfiltration', () => {
    const missed = EXFILTRATION_COMMANDS.filter(
      (s) => !analyzeShell(s.command).exfiltration.some((f) => f.reason.includes(s.reason)),
    ).map((s) => `${s.shows}: ${s.command}`);
    expect(missed).toEqual([]);
  });

  it('proves every read-only command read-only, with no mark', () => {
    const flagged = READ_ONLY_COMMANDS.filter((command) => {
      const analysis = analyzeShell(command);
      return analysis.effect !== 'read-only' || reasons(analysis).length > 0;
    }).map((command) => `${command} → ${reasons(analyzeShell(command)).join(' | ')}`);
    expect(flagged).toEqual([]);
  });

  it('never classes an ordinary command destructive', () => {
    expect(HARMLESS_COMMANDS.filter((command) => analyzeShell(command).effect === 'destructive')).toEqual([]);
  });
});

/** One plan holding every command of `commands` in each place: a step's call, its contract, its rollback and rollback contract, a postcondition. */
function planOf(commands: readonly string[]) {
  const providers = ['plan', 'build', 'pick-version'].map((id, i) => ({
    id,
    description: `Produce ${id}`,
    tool: 'echo',
    args: { message: id },
    outputs: [['tool', 'artifact', 'version'][i]],
    contract: { kind: 'assert', expression: 'true' },
  }));
  return PlanSchema.parse({
    id: 'classes',
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

describe('the classes in the gate marks (planRisks), in every place', () => {
  it('marks no read-only command anywhere', () => {
    const risks = planRisks(planOf(READ_ONLY_COMMANDS));
    READ_ONLY_COMMANDS.forEach((command, k) => {
      const step = risks.steps[`c${k}`]!;
      const marks = [
        ...step.destructive,
        ...step.contract,
        ...step.rollback,
        ...step.rollbackContract,
        ...step.unknown,
        ...step.exfiltration,
        ...(risks.postconditions[`p${k}`] ?? []),
        ...(risks.postconditionMarks[`p${k}`]?.unknown ?? []),
        ...(risks.postconditionMarks[`p${k}`]?.exfiltration ?? []),
      ];
      expect(marks, command).toEqual([]);
    });
  });

  it('marks every unknown form, in each place, as unknown or destructive', () => {
    const commands = UNKNOWN_COMMANDS.map((s) => s.command);
    const risks = planRisks(planOf(commands));
    commands.forEach((command, k) => {
      const step = risks.steps[`c${k}`]!;
      const at = (place: string, destructive: readonly string[]) =>
        destructive.length > 0 ||
        step.unknown.some((r) =>
          place === '' ? !/^(?:contract|rollback|rollback contract): /.test(r) : r.startsWith(place),
        );
      expect(at('', step.destructive), `step: ${command}`).toBe(true);
      expect(at('contract: ', step.contract), `contract: ${command}`).toBe(true);
      expect(at('rollback: ', step.rollback), `rollback: ${command}`).toBe(true);
      expect(at('rollback contract: ', step.rollbackContract), `rollback contract: ${command}`).toBe(true);
      const post = risks.postconditionMarks[`p${k}`]!;
      expect(
        (risks.postconditions[`p${k}`]?.length ?? 0) + post.unknown.length,
        `postcondition: ${command}`,
      ).toBeGreaterThan(0);
    });
  });

  it('marks every outbound flow as exfiltration, in each place', () => {
    const commands = EXFILTRATION_COMMANDS.map((s) => s.command);
    const risks = planRisks(planOf(commands));
    commands.forEach((command, k) => {
      const step = risks.steps[`c${k}`]!;
      for (const place of ['contract: ', 'rollback: ', 'rollback contract: '])
        expect(
          step.exfiltration.some((r) => r.startsWith(place)),
          `${place}${command}`,
        ).toBe(true);
      expect(
        step.exfiltration.some((r) => !/^(?:contract|rollback|rollback contract): /.test(r)),
        command,
      ).toBe(true);
      expect(risks.postconditionMarks[`p${k}`]?.exfiltration.length, command).toBeGreaterThan(0);
    });
  });
});
