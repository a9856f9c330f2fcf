// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
/**
 * Agent steps that keep their word (issue 22), through the real CLI: `plangate run` with its
 * in-process reviewer worker running a scripted agent ($PLANGATE_AGENT_COMMAND), on a plan with a
 * minute of wall clock whose agent step has 30 s. Such a plan used to pass validate and compile and
 * then fail at run ("HeartbeatSeconds must be smaller than TimeoutSeconds"); and the agent's task
 * names the first step's output, which used to reach it as the literal `${steps.stamp.version}`.
 */
import { readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, REPO, verifyChain, workDir } from './cli.ts';

const FIXTURES = join(REPO, 'tests/fixtures/agent-steps');

describe('plangate run with a short agent step', { timeout: 120_000 }, () => {
  it('runs an agent step of 30 s in a 60 s budget, its task and handoff holding the earlier step’s value', async () => {
    const tmp = await workDir();
    const log = join(tmp, 'agent-log');
    await mkdir(log);
    const plan = join(tmp, 'short-review.yaml');
    await copyFile(join(FIXTURES, 'short-review.yaml'), plan);
    const run = new CliRun(['run', plan, '--json', '--approve', '--files-dir', tmp], tmp, {
      PLANGATE_AGENT_COMMAND: join(FIXTURES, 'scripted-reviewer.sh'),
      AGENT_LOG: log,
    }).approvingAgentGates();
    expect(await run.exited, run.stderr).toBe(0);

    const events = run.events;
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(events.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    for (const step of ['stamp', 'review', 'report'])
      expect(
        events.filter((e) => e.event === 'TASK_COMPLETED' && e.task_id === step),
        step,
      ).toHaveLength(1);

    // The agent read the value, not the reference, on stdin and in its handoff.
    const prompt = readFileSync(join(log, 'review.prompt'), 'utf8');
    expect(prompt).toContain('Check that VERSION says 1.4.2 and write your verdict to review.txt.');
    expect(prompt).not.toContain('${');
    const handoff = readFileSync(join(log, 'review.handoff.md'), 'utf8');
    expect(handoff).toContain('VERSION says 1.4.2');
    expect(handoff).not.toContain('${steps.stamp.version}');
    expect(readFileSync(join(tmp, 'review.txt'), 'utf8')).toBe('APPROVED 1.4.2\n');
  });
});
