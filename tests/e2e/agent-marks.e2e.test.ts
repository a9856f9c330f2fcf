/**
 * Agent steps shown as what they are, and marks on what they describe (issue 30), through
 * `plangate run`: an agent step's gate shows the agent command that will run, its workspace, what
 * it may reach, its time limit and budget, and marks it "effect unknown", in the terminal, the
 * gate JSON and the page; `--approve` does not answer it. A destructive rollback marks the
 * rollback, not the step. A call the platform's policy denies is explained as a policy denial
 * naming the policy, never as credentials to fix and retry.
 */
import { copyFile, cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GateViewSchema } from '../../lib/launch/plans-api-schemas.ts';
import { sandboxSentence } from '../../lib/runtime/sandbox/sandbox.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { CliRun, REPO, runPlan, scenario, workDir } from './cli.ts';

const FIXTURES = join(REPO, 'tests/fixtures/agent-steps');
const AGENT = join(FIXTURES, 'scripted-reviewer.sh');

/** The approval link the terminal printed last. */
function lastLink(stderr: string): string {
  const links = [...stderr.matchAll(/Answer here or open (\S+)/g)];
  const link = links.at(-1)?.[1];
  if (!link) throw new Error(`no approval link in:\n${stderr}`);
  return link;
}

/** The gate JSON the link answers. */
async function gateJson(link: string) {
  const response = await fetch(link, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return GateViewSchema.parse(await response.json());
}

/** The approval page, opened from the link as a browser does. */
async function pageHtml(link: string): Promise<string> {
  return (await openApprovalPage(link)).html;
}

describe('agent steps and marks at the gate', { timeout: 120_000 }, () => {
  it('an agent step shows its command, workspace, reach, time limit, budget and "effect unknown"; --approve asks a person', async () => {
    const cwd = await workDir();
    const plan = join(cwd, 'short-review.yaml');
    await copyFile(join(FIXTURES, 'short-review.yaml'), plan);
    // This test is the person asked: it reads the gate, then answers it itself.
    const run = new CliRun(
      ['run', plan, '--json', '--approve', '--files-dir', cwd],
      cwd,
      { PLANGATE_AGENT_COMMAND: AGENT, AGENT_LOG: cwd },
      { approvesWhenAsked: false },
    );
    await run.until('the plan gate asked of a person', () =>
      run.stderr.includes("--approve: the platform's policy does not permit approving this gate"),
    );
    await run.until('the gate question', () => run.stderr.includes('Answer here or open'));
    // The shipped policy refuses auto-approval of an agent plan, and the harness says why it could not either.
    expect(run.stderr).toContain(
      'step review, effect unknown: agent reviewer decides at run time what it runs and changes',
    );
    expect(run.count('GATE_APPROVED')).toBe(0);
    const terminal = run.stderr.slice(run.stderr.indexOf('Approve plan'));
    expect(terminal).toContain('!! effect unknown: agent reviewer decides at run time what it runs');
    expect(terminal).toContain("agent run by: plangate run's own workers of target reviewer");
    expect(terminal).toContain(`agent command:\n       ${AGENT}\n`);
    expect(terminal).toContain(`workspace: ${cwd}`);
    expect(terminal).toContain(`may reach: ${sandboxSentence()}`);
    // The step's 30 s, within the plan's 60 s of wall clock.
    expect(terminal).toContain('time limit: 30 s');
    expect(terminal).toContain('budget: none declared');

    const link = lastLink(run.stderr);
    const json = await gateJson(link);
    const review = json.view?.steps.find((s) => s.id === 'review');
    expect(review?.agent).toEqual({
      runsOn: 'worker',
      runs: "plangate run's own workers of target reviewer, running $PLANGATE_AGENT_COMMAND",
      command: AGENT,
      workspace: cwd,
      reach: sandboxSentence(),
      timeLimitSeconds: 30,
    });
    expect(review?.risks.unknown).toEqual([expect.stringMatching(/^agent \S+ decides at run time/)]);
    expect(json.view?.steps.find((s) => s.id === 'stamp')?.agent).toBeUndefined();

    const page = await pageHtml(link);
    const card = page.slice(
      page.indexOf('id="step-review"'),
      page.indexOf('</article>', page.indexOf('id="step-review"')),
    );
    expect(card).toContain('<li class="pg-risk">effect unknown: agent reviewer decides');
    expect(card).toContain(`<dt>agent command</dt><dd><pre><code>${AGENT}</code></pre></dd>`);
    expect(card).toContain(`<dt>workspace</dt><dd>${cwd}</dd>`);
    expect(card).toContain('<dt>time limit</dt><dd>30 s</dd>');
    expect(card).toContain(`<dt>may reach</dt><dd>${sandboxSentence()}`);

    // A person approves: the agent runs, and the vote is theirs.
    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);
    const votes = run.events.filter((e) => e.event === 'GATE_VOTE');
    expect(votes).toHaveLength(1);
    expect(String(votes[0]?.details.comment ?? '')).not.toMatch(/--approve/);
  });

  it('with --no-workers, the gate names the worker taking the target, not a command it cannot know', async () => {
    const cwd = await workDir();
    const plan = join(cwd, 'short-review.yaml');
    await copyFile(join(FIXTURES, 'short-review.yaml'), plan);
    const run = runPlan(plan, cwd, ['--no-workers']);
    await run.until('the gate question', () => run.stderr.includes('Answer here or open'));
    const terminal = run.stderr.slice(run.stderr.indexOf('Approve plan'));
    expect(terminal).toContain(
      'agent run by: the worker taking target reviewer (plangate worker --target reviewer: its --agent-command, in its --workspace)',
    );
    expect(terminal).toContain('agent command: not known at this gate');
    expect(terminal).toContain("workspace: not known at this gate: its worker's --workspace");
    run.answer('reject not now');
    expect(await run.exited).toBe(1);
  });

  it('rollback.yaml: a destructive rollback marks the rollback, not the step', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('rollback.yaml'), cwd);
    await run.until('the gate question', () => run.stderr.includes('Answer here or open'));
    const terminal = run.stderr.slice(run.stderr.indexOf('Approve plan'));
    const stepOne = terminal.slice(terminal.indexOf('1. one:'), terminal.indexOf('2. two:'));
    // The step's own run is harmless; its rollback's mark sits under the rollback.
    expect(stepOne).not.toMatch(/^ {3}!! destructive/m);
    expect(stepOne).toMatch(
      /rollback \(shell\) \(command\):\n\s+rm one\.txt[^\n]*\n\s+!! destructive rollback: /,
    );

    const page = await pageHtml(lastLink(run.stderr));
    // Its own call writes one.txt (effect unknown), never "destructive" before the rollback.
    const card = page.slice(page.indexOf('id="step-one"'));
    expect(card.slice(0, card.indexOf('Rollback (shell)'))).not.toContain('destructive');
    expect(page).toMatch(/<div class="pg-call pg-command pg-risky">\n<p>Rollback \(shell\)/);
    // The graph's list marks no step destructive: none of their own calls is.
    const graph = page.slice(
      page.indexOf('class="graph-list"'),
      page.indexOf('</ol>', page.indexOf('class="graph-list"')),
    );
    expect(graph).not.toContain('destructive');
    run.answer('reject only looking');
    expect(await run.exited).toBe(1);
  });

  it('a call the policy denies is explained as a policy denial, naming the policy, not as credentials to retry', async () => {
    const cwd = await workDir();
    const policies = await mkdtemp(join(tmpdir(), 'plangate-denied-'));
    await cp(join(REPO, 'policies/default'), policies, { recursive: true });
    await writeFile(
      join(policies, 'org.cedar'),
      `@id("no-publishing")
@reason("publishing is the release team's")
forbid (principal, action == Action::"RunStep", resource)
when { resource.tool == "shell" && resource.hasTag("command") && resource.getTag("command") like "*publish*" };
`,
    );
    const plan = join(cwd, 'plan.json');
    await writeFile(
      plan,
      JSON.stringify({
        id: 'denied-publish',
        objective: 'Publish the package',
        sizePolicy: { minSteps: 1 },
        steps: [
          {
            id: 'publish',
            description: 'Publish the package',
            tool: 'shell',
            args: { command: 'echo publish > published.txt' },
            contract: { kind: 'command', command: 'test -f published.txt' },
          },
        ],
      }),
    );
    const run = runPlan(plan, cwd, ['--approve', '--policy', policies]);
    await run.until('the escalation', () => run.stderr.includes('failed:'));
    await run.until('its choices', () => /failed:[\s\S]*abort/.test(run.stderr));
    const escalation = run.stderr.slice(run.stderr.indexOf('Step "Publish the package" failed'));
    expect(escalation).toContain('policy denies');
    expect(escalation).toContain('no-publishing');
    expect(escalation).toContain(
      "the platform's policy denied this call (no-publishing: publishing is the release team's)",
    );
    expect(escalation).toContain(
      `to allow it, the owners of the platform's policy (${policies}) change or lift no-publishing`,
    );
    expect(escalation).toContain('a retry makes the same call, which is denied again');
    expect(run.stderr).not.toMatch(/[Cc]onfigure the credentials/);
    expect(escalation).not.toMatch(/retry +run the step again/);
    const page = await pageHtml(lastLink(run.stderr));
    expect(page).not.toMatch(/[Cc]onfigure the credentials/);
    expect(page).toContain('no-publishing');
    run.answer('abort');
    expect(await run.exited).toBe(1);
    const required = run.events.find((e) => e.event === 'PERMISSION_REQUIRED');
    expect(String(required?.details.message)).not.toMatch(/credentials/);
    expect(String(required?.details.message)).toContain('no-publishing');
  });
});
