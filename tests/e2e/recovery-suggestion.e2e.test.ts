/**
 * Seed 001's third recovery strategy, asking the model, through the real CLI and a scripted
 * OpenAI-compatible server (the real `openai` client talks to it): a step fails in a way no recipe
 * covers; the run has a planner, so the model is asked what to do; its suggestion is shown beside
 * the person's choices (terminal, the page, the gate JSON), and journaled. The person still
 * decides: accepting a change of args ends the run and sends version 2 to the gate, where the
 * change is shown, and it runs once approved. A hostile answer is refused and said so; the person
 * decides without it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startOpenAiServer, type WireServer } from '../planner/wire-servers.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { CliRun, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

const PLAN = `id: recover-by-model
version: 1
sizePolicy: { minSteps: 1 }
objective: Prepare, then deploy
steps:
  - id: prepare
    description: Write prepared.txt
    tool: shell
    args: { command: "echo ready > prepared.txt" }
    contract: { kind: command, command: test -f prepared.txt }
  - id: deploy
    description: Deploy the release
    dependsOn: [prepare]
    tool: shell
    args: { command: "echo 'deploy.sh: unsupported region moon-1' >&2; exit 3" }
    contract: { kind: command, command: test -f deployed.txt }
`;

const RETRY_WITH_ARGS = {
  strategy: 'retry_with_args',
  reasons: 'The region moon-1 does not exist; deploying to eu-west-1 writes deployed.txt.',
  args: { command: 'echo eu-west-1 > deployed.txt' },
};

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function modelAnswering(...answers: Parameters<typeof startOpenAiServer>[0]): Promise<WireServer> {
  const server = await startOpenAiServer(answers);
  servers.push(server);
  return server;
}

function runWithPlanner(cwd: string, server: WireServer): CliRun {
  const plan = join(cwd, 'plan.yaml');
  writeFileSync(plan, PLAN);
  return new CliRun(
    [
      'run',
      plan,
      '--approve',
      '--json',
      '--time-scale',
      '0.01',
      '--base-url',
      `${server.url}/v1`,
      '--model',
      'scripted',
    ],
    cwd,
  );
}

/** The link of the gate asked last so far (the plan gate's, once --approve leaves it to a person, comes first). */
const lastLinkIn = (stderr: string): string =>
  [...stderr.matchAll(/open (http:\S+\/approvals\/\S+)/g)].map((m) => m[1] as string).at(-1) as string;

// One test at a time: run side by side, the first test's escalation was once not reached in 60 s.
describe('the model suggests how to recover; the person decides', { timeout: 120_000 }, () => {
  it('shows a change of args on every channel; accepted, version 2 goes to the gate with the change and runs', async () => {
    const cwd = await workDir();
    const server = await modelAnswering({ plan: RETRY_WITH_ARGS, inputTokens: 900, outputTokens: 80 });
    const run = runWithPlanner(cwd, server);
    await run.until('the escalation', () => run.stderr.includes("accept  take the model's suggestion"));
    const first = run.executionArn;
    // The terminal: the suggestion, its reasons, the exact change, what accepting does.
    expect(run.stderr).toContain(
      'The model (openai scripted) suggests: retry the step with changed args. The decision is yours.',
    );
    expect(run.stderr).toContain(`Why: ${RETRY_WITH_ARGS.reasons}`);
    expect(run.stderr).toContain('Change: args: {"command":"echo eu-west-1 > deployed.txt"}');
    expect(run.stderr).toMatch(
      /accept: accepting it ends this run and sends version 2 of the plan \(sha256:/,
    );
    // The gate JSON and the page say the same.
    const link = lastLinkIn(run.stderr);
    const gate = (await (await fetch(link, { headers: { accept: 'application/json' } })).json()) as {
      recovery?: { suggestion: unknown; revision?: { version: number } };
    };
    expect(gate.recovery?.suggestion).toEqual(RETRY_WITH_ARGS);
    expect(gate.recovery?.revision?.version).toBe(2);
    const page = await openApprovalPage(link);
    expect(page.html).toContain('retry the step with changed args');
    expect(page.html).toContain('The region moon-1 does not exist');
    expect(page.html).toContain('value="ACCEPT_SUGGESTION"');
    // The model was told the failure.
    expect(JSON.stringify(server.requests[0])).toContain('unsupported region moon-1');

    run.answer('accept');
    await run.until(
      'version 2 at the gate',
      () => run.stderr.match(/Execution: arn:/g)?.length === 2,
      60_000,
    );
    // Version 1's plan gate was asked of a person too (it writes files): version 2's is the second.
    await run.until('the plan gate of version 2', () => (run.stderr.match(/approve {2}/g)?.length ?? 0) >= 2);
    const second = [...run.stderr.matchAll(/Execution: (arn:\S+)/g)].map((m) => m[1]).at(-1) as string;
    // Version 2 is not approved on the person's behalf (--approve): the model changed it.
    expect(run.stderr).toContain('requires a person');
    // Its page shows what changed since version 1.
    const v2Page = await openApprovalPage(lastLinkIn(run.stderr));
    expect(v2Page.html).toContain('<h2>Changes since v1</h2>');
    expect(v2Page.html).toMatch(
      /<li>Changed <code>deploy<\/code>: args <code class="value">[^<]*moon-1[^<]*<\/code> → <code class="value">[^<]*eu-west-1 &gt; deployed.txt[^<]*<\/code><\/li>/,
    );
    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);

    const v1 = await storedEvents(cwd, first);
    expect(verifyChain(v1).ok).toBe(true);
    expect(seedOrderProblems(v1)).toEqual([]);
    const suggested = v1.find((e) => e.event === 'RECOVERY_SUGGESTED');
    expect(suggested?.task_id).toBe('deploy');
    expect(suggested?.details).toMatchObject({
      strategy: 'retry_with_args',
      reasons: RETRY_WITH_ARGS.reasons,
      provider: 'openai',
      model: 'scripted',
      input_tokens: 900,
      output_tokens: 80,
      args: RETRY_WITH_ARGS.args,
      revision: { version: 2 },
    });
    expect(v1.filter((e) => e.event === 'RECOVERY_ESCALATION').at(-1)?.details).toMatchObject({
      user_decision: 'ABORT',
      decided_by: 'person',
      suggestion: 'accepted',
    });
    expect(v1.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { error: 'Plangate.Aborted' } });

    const v2 = await storedEvents(cwd, second);
    expect(v2[0]).toMatchObject({
      event: 'PLAN_CREATED',
      planVersion: 2,
      planDigest: (suggested?.details.revision as { digest?: string } | undefined)?.digest,
      details: {
        planner: {
          provider: 'openai',
          model: 'scripted',
          revision_of: v1[0]?.planDigest,
          feedback: expect.stringContaining('retry_with_args'),
        },
      },
    });
    expect(v2.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({ gate: 'plan' });
    expect(v2.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
  });

  it('refuses an answer that is not a suggestion, says why, and leaves the choice to the person', async () => {
    const cwd = await workDir();
    const server = await modelAnswering({
      plan: { strategy: 'run_anything', reasons: 'trust me', command: 'rm -rf /' },
    });
    const run = runWithPlanner(cwd, server);
    await run.until('the escalation', () => run.stderr.includes('abort   stop the run'));
    expect(run.stderr).not.toContain('accept  take');
    run.answer('abort');
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    expect(events.some((e) => e.event === 'RECOVERY_SUGGESTED')).toBe(false);
    const refused = events.find((e) => e.event === 'RECOVERY_SUGGESTION_REFUSED');
    expect(refused?.details).toMatchObject({ provider: 'openai', model: 'scripted' });
    expect(String(refused?.details.reason)).toMatch(/^the answer is not a recovery suggestion: \/strategy/);
  });

  it('takes a suggestion to skip from the page: the step is skipped and the choice journaled', async () => {
    const cwd = await workDir();
    const server = await modelAnswering({
      plan: { strategy: 'skip', reasons: 'Deploying is not needed to prepare the release.' },
    });
    const run = runWithPlanner(cwd, server);
    await run.until('the escalation', () => run.stderr.includes("accept  take the model's suggestion"));
    const page = await openApprovalPage(lastLinkIn(run.stderr));
    expect(page.html).toContain('accepting it skips the step');
    const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
    const answered = await page.answer({ digest, decision: 'ACCEPT_SUGGESTION' });
    expect(answered.status).toBe(200);
    // The deploy step is critical: skipping it stops the run, as a SKIP at any escalation does.
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.event === 'RECOVERY_ESCALATION').at(-1)?.details).toMatchObject({
      user_decision: 'SKIP',
      suggestion: 'accepted',
    });
  });
});
