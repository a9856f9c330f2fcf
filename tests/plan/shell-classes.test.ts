// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * The three classes over the whole corpus, as `npm run reliability` counts them but without the
 * CLI: every destructive command classed destructive, every unknown form unknown (or destructive),
 * every outbound flow marked exfiltration, every read-only command proven read-only with no mark,
 * and no ordinary command destructive. Then the same through planRisks in every place a plan
 * holds a command (bench/reliability/corpus-classes.ts, which `npm run reliability` reports).
 */
import { describe, expect, it } from 'vitest';
import { corpusClasses } from '../../bench/reliability/corpus-classes.ts';
import {
  DESTRUCTIVE_COMMANDS,
  EXFILTRATION_COMMANDS,
  HARMLESS_COMMANDS,
  READ_ONLY_COMMANDS,
  UNKNOWN_COMMANDS,
} from '../../bench/reliability/shell-corpus.ts';
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

describe('the classes in the gate marks (planRisks), in every place a command stands', () => {
  it('marks every unknown form unknown or destructive, every outbound flow exfiltration, no read-only command at all', () => {
    const classes = corpusClasses();
    expect(classes.unknown.missed).toEqual([]);
    expect(classes.exfiltration.missed).toEqual([]);
    expect(classes.readOnly.flagged).toEqual([]);
    expect(classes.unknown.classed).toBe(UNKNOWN_COMMANDS.length);
  });
});
