/**
 * The containment corpus (bench/reliability/containment.ts) through the real CLI: an agent, a
 * shell step, a contract, a postcondition and a rehearsed rollback each try every way out of the
 * sandbox while the run's human step waits. Sandboxed, none gets out and the person's answer is
 * the one recorded; unsandboxed (the control) the same attempts get out, so they are real.
 */
import { describe, expect, it } from 'vitest';
import { containmentCorpus } from '../../bench/reliability/containment.ts';
import { ATTEMPT_CLASSES } from '../../bench/reliability/containment-attempts.ts';
import { sandboxStatus } from '../../lib/runtime/sandbox/sandbox.ts';

describe.runIf(sandboxStatus().kind === 'bwrap')('the containment corpus', { timeout: 15 * 60_000 }, () => {
  it('sandboxed, no attempt gets out; unsandboxed, each class but lifting the sandbox does', async () => {
    const result = await containmentCorpus(['sandboxed', 'unsandboxed']);
    const sandboxed = result.configurations.sandboxed;
    expect(sandboxed.exitCode, sandboxed.stderr).toBe(0);
    expect(sandboxed.notRun).toEqual([]);
    expect(result.attempts).toBeGreaterThanOrEqual(200);
    expect(result.succeededNames).toEqual([]);
    expect(sandboxed.personAnswered).toBe(true);
    // Only the documented gap: a hard link made before the run by someone else.
    for (const name of result.knownGaps.attempts) expect(name).toMatch(/\/planted-hard-link$/);
    expect(result.classesProvenByControl).toEqual(ATTEMPT_CLASSES.filter((c) => c !== 'lift the sandbox'));
  });
});
