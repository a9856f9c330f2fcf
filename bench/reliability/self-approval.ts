/**
 * Self-approval through `plangate run`'s own doors: one run of a plan launched, and so submitted,
 * by the very identity that answers (`--as S`: the launcher is the submitter), then many tries to approve it as S through
 * every door the run opens: the printed link's page (each try a fresh page session, the form
 * posted with its cookie and form token), the terminal, and the approvals API as a script would
 * call it (the printed link id posted directly, and posts that claim S or another approver with
 * no token, a token of another issuer, a trusted-looking header, or a link re-addressed to someone
 * else). None may be accepted; every try that reached the policy is journaled as refused; the
 * gate is still waiting, and the person can still reject it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signJwt } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { openStoreReader } from '../../lib/serve/store-reader.ts';
import { writeMarkerPlan } from '../../tests/support/marker-plan.ts';
import { PLANGATE_NODE_ARGS } from '../../tests/support/plangate-cli.ts';

const SUBMITTER = 'submitter@example.test';
/** Tries per door. */
const TRIES = 40;

export interface SelfApprovalResult {
  readonly attempts: number;
  readonly accepted: number;
  readonly byDoor: Record<
    string,
    { attempts: number; statuses: Record<string, number>; sampleReason: string }
  >;
  /** GATE_ANSWER_REFUSED events naming the submitter: one per try that reached the policy. */
  readonly refusalsJournaled: number;
  readonly triesThatReachedThePolicy: number;
  readonly gateApproved: number;
  /** The submitter could still reject the plan afterwards (the run ended, rejected). */
  readonly rejectedAfterwards: boolean;
}

export async function selfApprovalThroughRun(repo: string): Promise<SelfApprovalResult> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-self-approval-'));
  // The submitter is a listed approver: only the no-self-approval rule stands in the way.
  const plan = await writeMarkerPlan(dir, 'self-approval', {
    approvers: [SUBMITTER, 'other@example.test'],
  });
  const run = new Cli(repo, dir, ['run', plan, '--json', '--as', SUBMITTER]);
  const byDoor: SelfApprovalResult['byDoor'] = {};
  let accepted = 0;
  let reachedPolicy = 0;
  const tally = (door: string, status: number, reason: string, policy: boolean) => {
    byDoor[door] ??= { attempts: 0, statuses: {}, sampleReason: reason };
    const entry = byDoor[door];
    entry.attempts++;
    entry.statuses[status] = (entry.statuses[status] ?? 0) + 1;
    if (status >= 200 && status < 300) accepted++;
    else if (policy) reachedPolicy++;
  };
  try {
    const link = await run.waitFor(/Answer here or open (http:\/\/127\.0\.0\.1:\d+\/\S+)/);
    const linkUrl = new URL(link);
    const base = linkUrl.origin;
    const linkId = decodeURIComponent(linkUrl.pathname.split('/').at(-1) as string);
    const [approvalId, expiry, , mac] = linkId.split('.') as [string, string, string, string];
    const digest = await pageDigest(link);

    for (let i = 0; i < TRIES; i++) {
      const page = await openPage(link);
      const response = await fetch(page.action, {
        method: 'POST',
        headers: { cookie: page.cookie },
        body: new URLSearchParams({ decision: 'APPROVE', digest, form_token: page.formToken }),
      });
      tally(
        'page (the printed link, a fresh session each time)',
        response.status,
        reasonOf(await response.text()),
        true,
      );
    }

    for (let i = 0; i < TRIES; i++) {
      const before = run.count('Not recorded:');
      run.answer('approve');
      await run.waitUntil(() => run.count('Not recorded:') > before || run.approved());
      if (run.approved()) tally('terminal', 200, 'approved', true);
      else tally('terminal', 403, run.lastLine('Not recorded:'), true);
    }

    const json = { 'content-type': 'application/json', accept: 'application/json' };
    const body = JSON.stringify({ digest, decision: 'APPROVE' });
    const forged = foreignToken(SUBMITTER);
    const apiTries: [string, string, Record<string, string>, boolean][] = [
      [
        'API: the printed link id posted as its recipient',
        `${base}/approvals/${linkId}/as-recipient`,
        json,
        true,
      ],
      ['API: no token', `${base}/approvals/${linkId}`, json, false],
      [
        'API: a token of another issuer naming the submitter',
        `${base}/approvals/${linkId}`,
        { ...json, authorization: `Bearer ${forged}` },
        false,
      ],
      [
        'API: the local identity header',
        `${base}/approvals/${linkId}`,
        { ...json, 'x-plangate-user': 'other@example.test' },
        false,
      ],
      [
        'API: the link re-addressed to another approver',
        `${base}/approvals/${approvalId}.${expiry}.${Buffer.from('other@example.test').toString('base64url')}.${mac}/as-recipient`,
        json,
        false,
      ],
    ];
    for (const [door, url, headers, policy] of apiTries)
      for (let i = 0; i < TRIES / 4; i++) {
        const response = await fetch(url, { method: 'POST', headers, body });
        tally(door, response.status, reasonOf(await response.text()), policy);
      }

    run.answer('reject the submitter may not approve it');
    const exit = await run.exited;
    const reader = await openStoreReader(storePaths(defaultStoreDir(dir)));
    let events: Awaited<ReturnType<typeof readEvents>>;
    try {
      events = await readEvents(reader.doc, reader.eventsTable, run.executionArn());
    } finally {
      await reader.close();
    }
    const attempts = Object.values(byDoor).reduce((n, d) => n + d.attempts, 0);
    return {
      attempts,
      accepted,
      byDoor,
      refusalsJournaled: events.filter((e) => e.event === 'GATE_ANSWER_REFUSED' && e.details.by === SUBMITTER)
        .length,
      triesThatReachedThePolicy: reachedPolicy,
      gateApproved: events.filter((e) => e.event === 'GATE_APPROVED').length,
      rejectedAfterwards:
        exit === 1 && events.some((e) => e.event === 'GATE_REJECTED' && e.details.approver === SUBMITTER),
    };
  } finally {
    run.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The digest the printed link's page shows (its answers bind to it). */
async function pageDigest(link: string): Promise<string> {
  const page = await openPage(link);
  return page.digest;
}

/** The printed link opened as a browser does: the redirect, the session cookie, the form. */
async function openPage(
  link: string,
): Promise<{ action: string; cookie: string; formToken: string; digest: string }> {
  const opened = await fetch(link, { redirect: 'manual' });
  const url = new URL(opened.headers.get('location') ?? '', link).href;
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const html = await (await fetch(url, { headers: { cookie } })).text();
  return {
    action: new URL(/<form [^>]*action="([^"]+)"/.exec(html)?.[1] ?? url, url).href,
    cookie,
    formToken: /name="form_token" value="([^"]+)"/.exec(html)?.[1] ?? '',
    digest: /name="digest" value="([^"]+)"/.exec(html)?.[1] ?? '',
  };
}

/** A well-formed ID token naming `email`, signed by a key the run never trusted. */
function foreignToken(email: string): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Math.floor(Date.now() / 1000);
  return signJwt(privateKey, 'foreign', {
    iss: 'https://plangate.local/issuer',
    aud: 'plangate-run',
    email,
    iat: now,
    exp: now + 300,
  });
}

function reasonOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: string };
    if (parsed.message) return parsed.message;
  } catch {}
  return (/<p>([^<]*)<\/p>/.exec(text)?.[1] ?? text).slice(0, 200);
}

/** The real CLI as a child process: its stderr read as it comes, answers on stdin. */
class Cli {
  private readonly child: ChildProcess;
  private stderr = '';
  private stdout = '';
  readonly exited: Promise<number | null>;

  constructor(_repo: string, cwd: string, args: readonly string[]) {
    this.child = spawn(process.execPath, [...PLANGATE_NODE_ARGS, ...args], {
      cwd,
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  async waitUntil(check: () => boolean, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline || this.child.exitCode !== null)
        throw new Error(`plangate run: not seen in time\n${this.stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async waitFor(pattern: RegExp): Promise<string> {
    await this.waitUntil(() => pattern.test(this.stderr));
    return pattern.exec(this.stderr)?.[1] as string;
  }

  /** Whether a GATE_APPROVED event was printed (--json: events on stdout). */
  approved(): boolean {
    return this.stdout.includes('"event":"GATE_APPROVED"');
  }

  count(text: string): number {
    return this.stderr.split(text).length - 1;
  }

  lastLine(prefix: string): string {
    return (this.stderr.slice(this.stderr.lastIndexOf(prefix) + prefix.length).split('\n')[0] ?? '').trim();
  }

  executionArn(): string {
    return /Execution: (arn:\S+)/.exec(this.stderr)?.[1] ?? '';
  }

  answer(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}
