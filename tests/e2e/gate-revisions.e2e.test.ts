/**
 * What a gate asks about is what runs, and a modification is a plan, end to end: `plangate serve`
 * (answers posted to the approvals API as scripts do, the approver named by the loopback identity
 * header, the approval emails it writes) and `plangate run` (the terminal, and the page of the
 * link it prints).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { ApiClient } from '../support/api-client.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { runPlan, storedEvents, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

const ALICE = 'alice@example.test';
const BOB = 'bob@example.test';

/** A one-step shell plan; `gated` gives the step its own gate. */
function plan(id: string, command: string, { gated = false, contract = 'true' } = {}) {
  return {
    id,
    version: 1,
    objective: 'Run one command once approved',
    sizePolicy: { minSteps: 1 },
    approval: { approvers: [ALICE, BOB], quorum: 1, allowAutoApprove: false },
    steps: [
      {
        id: 'work',
        description: 'Run the command',
        tool: 'shell',
        args: { command },
        contract: { kind: 'command', command: contract },
        ...(gated ? { requiresApproval: true } : {}),
      },
    ],
  };
}

let store: string;
/** serve's cwd: where plan code works (never the store). */
let workspace: string;
let serve: ServeProcess;
let api: ApiClient;

const as = (user: string, body?: unknown) => ({
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': user },
});

/** Submits as carol; the link of the plan gate serve printed. */
async function submit(body: ReturnType<typeof plan>): Promise<{ executionArn: string; link: string }> {
  const res = await api.request('POST', '/plans', as('carol', body));
  expect(res.status, res.text).toBe(201);
  return {
    executionArn: res.json().executionArn as string,
    link: await gateLink(`gate plan of ${body.id} v1`),
  };
}

/** The link id of the gate whose "waits" line starts with `prefix`. */
async function gateLink(prefix: string): Promise<string> {
  const line = await serve.line((l) => l.startsWith(`${prefix} waits: `));
  return decodeURIComponent(line.split('/approvals/')[1] as string);
}

/** The email serve wrote to `to` after the gate line `prefix`, as text. */
async function emailAfter(prefix: string, to: string): Promise<string> {
  const line = await serve.line((l) => l.startsWith(`${prefix} waits: `));
  const index = serve.lines.indexOf(line);
  const emailLine = await serve.line(
    (l) =>
      serve.lines.indexOf(l) > index && l.startsWith('  email: ') && l.includes(to.split('@')[0] as string),
  );
  const eml = await readFile(emailLine.slice('  email: '.length), 'utf8');
  const text =
    /Content-Type: text\/plain; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+)/.exec(
      eml,
    )?.[1];
  return Buffer.from((text ?? '').replace(/\r\n/g, ''), 'base64').toString('utf8');
}

async function gateOf(link: string) {
  const res = await api.request('GET', `/approvals/${encodeURIComponent(link)}`, {
    headers: { accept: 'application/json' },
  });
  expect(res.status, res.text).toBe(200);
  return res.json() as Record<string, unknown> & {
    planDigest: string;
    status: string;
    votes: number;
    revision?: { number: number; digest: string; by: string };
    stepGate?: { step: { call: { text: string }; revised?: Record<string, unknown> } };
  };
}

async function answer(link: string, user: string, body: Record<string, unknown>) {
  const res = await api.request('POST', `/approvals/${encodeURIComponent(link)}`, as(user, body));
  return { status: res.status, body: res.json() as Record<string, unknown> };
}

async function untilEvent(executionArn: string, type: string, count = 1): Promise<JournalRecord[]> {
  for (let i = 0; i < 600; i++) {
    const res = await api.request(
      'GET',
      `/executions/${encodeURIComponent(executionArn)}/events`,
      as('carol'),
    );
    const events = (res.json() as { events: JournalRecord[] }).events;
    if (events.filter((e) => e.event === type).length >= count) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn}: no ${count} × ${type}`);
}

describe('plangate serve', () => {
  beforeAll(async () => {
    store = await mkdtemp(join(tmpdir(), 'plangate-revisions-'));
    workspace = await workDir();
    serve = startServe(['--identity', 'header', '--store', store, '--time-scale', '0.01'], workspace);
    api = new ApiClient(await serve.line(() => true));
  }, 180_000);
  afterAll(async () => {
    await serve?.stop();
  });

  describe('a step gate shows and binds the revision its plan gate approved', { timeout: 120_000 }, () => {
    it('through the approvals API and the approval email of plangate serve', async () => {
      await mkdir(join(workspace, 'scratch'), { recursive: true });
      await mkdir(join(workspace, 'victim'), { recursive: true });
      const { executionArn, link } = await submit(
        plan('revisions-step-gate', 'rm -rf ./scratch', { gated: true, contract: 'test ! -e victim' }),
      );
      const { planDigest } = await gateOf(link);
      const modified = await answer(link, BOB, {
        digest: planDigest,
        decision: 'APPROVE_WITH_MODIFICATIONS',
        argOverrides: { work: { command: 'rm -rf ./victim' } },
      });
      expect(modified.body).toMatchObject({ status: 'modified', revision: 1 });
      const revisionDigest = modified.body.digest as string;
      expect((await answer(link, ALICE, { digest: revisionDigest, decision: 'APPROVE' })).body).toMatchObject(
        {
          status: 'decided',
        },
      );

      // The step's own gate asks about what will run: the revision's command, bound to its digest.
      const stepLink = await gateLink('gate step work of revisions-step-gate v1');
      const stepGate = await gateOf(stepLink);
      expect(stepGate.stepGate?.step.call.text).toBe('rm -rf ./victim');
      expect(stepGate.stepGate?.step.revised).toMatchObject({
        revision: 1,
        by: BOB,
        replaces: { text: 'rm -rf ./scratch' },
      });
      expect(stepGate.revision).toMatchObject({ number: 1, digest: revisionDigest, by: BOB });
      const mail = await emailAfter('gate step work of revisions-step-gate v1', ALICE);
      expect(mail).toContain('rm -rf ./victim');
      expect(mail).toContain('changed by revision 1');

      // An answer bound to the unrevised plan is not an answer about what runs.
      const stale = await answer(stepLink, ALICE, { digest: planDigest, decision: 'APPROVE' });
      expect(stale.status).toBe(409);
      expect(stale.body.message).toContain('revision 1');
      // A modification at the step gate is a plan too: a command that is not a string is refused.
      const invalid = await answer(stepLink, ALICE, {
        digest: revisionDigest,
        decision: 'APPROVE_WITH_MODIFICATIONS',
        argOverrides: { work: { command: 123 } },
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body.problems).toMatchObject([
        { code: 'invalid-args', location: { file: 'answer', pointer: '/argOverrides/work/command' } },
      ]);
      expect(
        (await answer(stepLink, ALICE, { digest: revisionDigest, decision: 'APPROVE' })).body,
      ).toMatchObject({ status: 'decided' });

      const events = await untilEvent(executionArn, 'EXECUTION_COMPLETE');
      const stepVotes = events.filter((e) => e.event === 'GATE_VOTE' && e.details.gate === 'step');
      expect(stepVotes.map((e) => e.details.digest)).toEqual([revisionDigest]);
      expect(
        events.find((e) => e.event === 'GATE_APPROVED' && e.details.gate === 'step')?.details.digest,
      ).toBe(revisionDigest);
      expect(events.at(-1)?.details).toMatchObject({ succeeded: true });
      expect(existsSync(join(workspace, 'victim'))).toBe(false);
      expect(existsSync(join(workspace, 'scratch'))).toBe(true);
    });
  });

  describe('a modification is a plan: refused with every located problem, nothing changed', {
    timeout: 120_000,
  }, () => {
    it('through the approvals API of plangate serve', async () => {
      const { executionArn, link } = await submit(plan('revisions-invalid', 'echo original > out.txt'));
      const { planDigest } = await gateOf(link);
      const cases: [Record<string, unknown>, [string, string][]][] = [
        [{ env: { BASH_ENV: './evil.sh' } }, [['unsafe-env', '/argOverrides/work/env/BASH_ENV']]],
        [{ command: 'nice rm -rf x' }, [['destructive-without-approval', '/argOverrides/work']]],
        [{ command: 'env X=1 rm -rf x' }, [['destructive-without-approval', '/argOverrides/work']]],
        [{ command: "sh -c 'rm -rf x'" }, [['destructive-without-approval', '/argOverrides/work']]],
        [{ command: 'true;rm -rf x' }, [['destructive-without-approval', '/argOverrides/work']]],
        [{ command: 123 }, [['invalid-args', '/argOverrides/work/command']]],
        [{ comand: 'ls' }, [['invalid-args', '/argOverrides/work/comand']]],
        [{ command: '' }, [['invalid-args', '/argOverrides/work/command']]],
        [
          { command: '', cwdd: '.', env: { LD_PRELOAD: '/tmp/x.so' } },
          [
            ['invalid-args', '/argOverrides/work/command'],
            ['invalid-args', '/argOverrides/work/cwdd'],
            ['unsafe-env', '/argOverrides/work/env/LD_PRELOAD'],
          ],
        ],
      ];
      for (const [overrides, expected] of cases) {
        const refused = await answer(link, BOB, {
          digest: planDigest,
          decision: 'APPROVE_WITH_MODIFICATIONS',
          argOverrides: { work: overrides },
        });
        expect(refused.status, JSON.stringify(overrides)).toBe(400);
        const problems = refused.body.problems as { code: string; location: { pointer: string } }[];
        expect(problems.map((p) => [p.code, p.location.pointer]).sort(), JSON.stringify(overrides)).toEqual(
          [...expected].sort(),
        );
        const gate = await gateOf(link);
        expect(gate).toMatchObject({ status: 'pending', votes: 0 });
        expect(gate.revision).toBeUndefined();
      }
      // Approved plainly, the plan runs as submitted.
      expect((await answer(link, ALICE, { digest: planDigest, decision: 'APPROVE' })).body).toMatchObject({
        status: 'decided',
      });
      const events = await untilEvent(executionArn, 'EXECUTION_COMPLETE');
      expect(events.at(-1)?.details).toMatchObject({ succeeded: true });
      expect(events.filter((e) => e.event === 'GATE_PLAN_MODIFIED')).toEqual([]);
      expect(
        events.filter((e) => e.event === 'GATE_ANSWER_REFUSED').map((e) => [e.details.by, e.details.reason]),
      ).toEqual(cases.map(() => [BOB, 'invalid']));
      expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('original\n');
    });
  });
});

describe('plangate run: the terminal and the printed page', { timeout: 120_000 }, () => {
  it('refuses invalid modifications in the terminal and on the page, each problem shown; the plan then runs as submitted', async () => {
    const cwd = await workDir();
    const file = join(cwd, 'plan.json');
    await writeFile(
      file,
      JSON.stringify({
        ...plan('revisions-terminal', 'echo original > out.txt'),
        approval: { allowAutoApprove: false },
      }),
    );
    const run = runPlan(file, cwd, ['--solo']);
    await run.until('the plan gate', () => run.stderr.includes('change <step> <arg> <value>'));
    run.answer('change work env {"BASH_ENV": "./evil.sh"}');
    await run.until('the refusal', () => run.stderr.includes('decision.argOverrides.work.env.BASH_ENV'));
    run.answer('change work command 123');
    await run.until('the second refusal', () => run.stderr.includes('decision.argOverrides.work.command:'));
    run.answer('change work command nice rm -rf x');
    await run.until('the third refusal', () =>
      run.stderr.includes("a destructive command needs the step's own gate"),
    );
    // On the page the run prints: the page again, the problem beside the command's field.
    const link = /open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/.exec(run.stderr)?.[1] as string;
    const page = await openApprovalPage(link);
    const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
    const refused = await page.answer({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      digest,
      'arg.work.command': 'env X=1 rm -rf x',
    });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain('env X=1 rm -rf x');
    expect(html).toMatch(/needs the step&#39;s own gate|needs the step's own gate/);
    expect(run.stderr).not.toContain('revision 1');

    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(events.filter((e) => e.event === 'GATE_PLAN_MODIFIED')).toEqual([]);
    expect(events.filter((e) => e.event === 'GATE_ANSWER_REFUSED')).toHaveLength(4);
    expect(await readFile(join(cwd, 'out.txt'), 'utf8')).toBe('original\n');
  });

  it('asks the step gate about the revision approved at the plan gate, and its answer binds that digest', async () => {
    const cwd = await workDir();
    await mkdir(join(cwd, 'scratch'));
    await mkdir(join(cwd, 'victim'));
    const file = join(cwd, 'plan.json');
    const body = plan('revisions-terminal-step', 'rm -rf ./scratch', {
      gated: true,
      contract: 'test ! -e victim',
    });
    await writeFile(file, JSON.stringify({ ...body, approval: { allowAutoApprove: false } }));
    const run = runPlan(file, cwd, ['--solo']);
    await run.until('the plan gate', () => run.stderr.includes('change <step> <arg> <value>'));
    run.answer('change work command rm -rf ./victim');
    await run.until('the revision asked about', () => run.stderr.includes('Modified: revision 1'));
    run.answer('approve');
    await run.untilEvent('GATE_APPROVED');
    const mark = run.stderr.length;
    await run.until('the step gate question', () =>
      run.stderr.slice(mark).includes('change <step> <arg> <value>'),
    );
    // The step gate asks about the command that will run, as the revision changed it.
    const asked = run.stderr.slice(mark);
    expect(asked).toContain('rm -rf ./victim');
    expect(asked).toContain('changed by revision 1');
    const revisionDigest = run.events.find((e) => e.event === 'GATE_PLAN_MODIFIED')?.details.to as string;
    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(
      events.filter((e) => e.event === 'GATE_VOTE' && e.details.gate === 'step').map((e) => e.details.digest),
    ).toEqual([revisionDigest]);
    expect(existsSync(join(cwd, 'victim'))).toBe(false);
    expect(existsSync(join(cwd, 'scratch'))).toBe(true);
  });
});
