/// <reference lib="dom" />
/**
 * The approval page in a real browser (Debian's Chromium driven by playwright-core), served by
 * `plangate serve`'s platform: the approvals Lambda handler behind the local API Gateway, over
 * dynalite and the engine. Approvers open their emailed (recipient-bound) links as a person would:
 * on a phone-sized screen, without JavaScript, by keyboard only, with a double click, in two tabs
 * at once, with the back button after deciding, and after the link expired; a second version of a
 * plan shows its graph and what changed, and a step gate is answered on its own page.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalHostedUi } from '../../lib/aws-local/api-gateway/hosted-ui.ts';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import { LinkSigner, parseLinkId } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';
import { echoChainPlan, echoStep } from '../support/echo-plan.ts';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
if (!CHROMIUM)
  process.stdout.write(
    'approval page browser tests skipped: no Chromium at /usr/bin/chromium (apt-get install chromium)\n',
  );

const SUBMITTER = {
  accessKeyId: 'AKIDBROWSER',
  secretAccessKey: 'browser-secret-0123456789',
  arn: 'arn:aws:iam::123456789012:user/submitter',
};
const APPROVERS = ['ana@example.test', 'ben@example.test'];
/** Who may sign in at the local hosted UI: the approvers, and someone the plans do not name. */
const USERS = {
  'ana@example.test': 'ana-password-1',
  'ben@example.test': 'ben-password-2',
  'mallory@example.test': 'mallory-password-3',
};
const CLIENT_ID = 'plangate-approval-page';

let dir: string;
let platform: LocalPlatform;
let signer: LinkSigner;
let browser: Browser;
let hostedUi: LocalHostedUi;
const gates: ApprovalNotice[] = [];
/** The shared link of each gate (Slack's and the web's), by approval id. */
const sharedLinks = new Map<string, string>();
/** The .eml files the local mail sink wrote, by approval id. */
const emails = new Map<string, readonly string[]>();

function plan(id: string, timeoutSeconds = 3600) {
  return echoChainPlan(id, ['collect', 'report'], {
    approval: { approvers: APPROVERS, allowAutoApprove: false, timeoutSeconds },
  });
}

/** Submits a plan through the Plans API and returns its plan gate once the gate is waiting. */
async function gateOf(id: string, timeoutSeconds?: number): Promise<ApprovalNotice> {
  return submit(plan(id, timeoutSeconds));
}

async function submit(body: { readonly id: string; readonly version: number }): Promise<ApprovalNotice> {
  const response = await signedFetch(`${platform.url}/plans`, SUBMITTER, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return waitForGate((g) => g.kind === 'plan' && g.plan.id === body.id && g.plan.version === body.version);
}

async function waitForGate(wanted: (gate: ApprovalNotice) => boolean): Promise<ApprovalNotice> {
  for (let i = 0; i < 400; i++) {
    const gate = gates.find(wanted);
    if (gate) return gate;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no such gate');
}

/**
 * The link in the email the local mail sink wrote for `recipient` (its plain-text part, decoded as
 * a mail client would); it answers as that recipient.
 */
async function emailedLink(gate: ApprovalNotice, recipient: string): Promise<string> {
  const file = emails.get(gate.approvalId)?.find((f) => f.endsWith(`${recipient}.eml`));
  if (!file) throw new Error(`no email for ${recipient}`);
  const raw = await readFile(file, 'utf8');
  const boundary = /Content-Type: multipart\/alternative; boundary="([^"]+)"/.exec(raw)?.[1] as string;
  expect(raw).toMatch(
    new RegExp(`^From: plangate <plangate@localhost>\\r\\nTo: <${recipient.replace('.', '\\.')}>\\r\\n`),
  );
  expect(raw).toContain('Content-Type: text/html; charset=UTF-8');
  const textPart = raw.split(`--${boundary}`).find((p) => p.includes('Content-Type: text/plain')) as string;
  const text = Buffer.from(textPart.split('\r\n\r\n')[1] ?? '', 'base64').toString('utf8');
  const link = /Answer here: (\S+)/.exec(text)?.[1] as string;
  expect(link).toBe(
    `${platform.url}/approvals/${encodeURIComponent(signer.forRecipient(gate.approvalId, gate.plan.digest, recipient))}`,
  );
  return link;
}

const journal = (gate: ApprovalNotice) =>
  readEvents(platform.stack.data.clients.doc, platform.stack.data.tableNames.events, gate.executionId);

const decisions = async (gate: ApprovalNotice) =>
  (await journal(gate)).filter((e) => e.event === 'GATE_APPROVED' || e.event === 'GATE_REJECTED');

/** The task token the gates table keeps for a gate (it must never reach a page). */
async function storedToken(gate: ApprovalNotice): Promise<string> {
  const stored = await platform.stack.data.clients.doc.send(
    new GetCommand({
      TableName: platform.stack.data.tableNames.gates,
      Key: { approvalId: parseLinkId(gate.approvalId).approvalId },
    }),
  );
  const taskToken = stored.Item?.taskToken as string;
  expect(taskToken.length).toBeGreaterThan(20);
  return taskToken;
}

/**
 * The page never holds the link's signature, its raw approval id or the task token: it names its
 * gate only by its session's handle, in its own URL and the form's action.
 */
async function expectCleanPage(page: Page, gate: ApprovalNotice, taskToken: string): Promise<void> {
  const html = await page.content();
  expect(html).not.toContain(parseLinkId(gate.approvalId).approvalId);
  expect(html).not.toContain(gate.approvalId.split('.').at(-1));
  expect(html).not.toContain(taskToken);
  const path = new URL(page.url()).pathname;
  expect(path).toMatch(/^\/approvals\/[A-Za-z0-9_-]{22}$/);
  expect(await page.locator('form#plangate-answer').getAttribute('action')).toMatch(
    new RegExp(`^${path}(/as-recipient)?$`),
  );
}

/** Every URL the tab's main frame commits, in order (redirects are never committed). */
function visitedUrls(page: Page): string[] {
  const visited: string[] = [];
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) visited.push(frame.url());
  });
  return visited;
}

/**
 * No URL the tab showed, and no entry of its history, holds any part of the signed link: neither
 * its MAC nor the link id itself (the history read through the DevTools protocol, which also
 * works with JavaScript disabled).
 */
async function expectNoLinkInHistory(
  page: Page,
  link: string,
  visited: readonly string[],
): Promise<string[]> {
  const linkId = decodeURIComponent(link.split('/').at(-1) as string);
  const cdp = await page.context().newCDPSession(page);
  const { entries } = (await cdp.send('Page.getNavigationHistory')) as { entries: { url: string }[] };
  await cdp.detach();
  const urls = [page.url(), ...visited, ...entries.map((e) => e.url)];
  expect(visited.length).toBeGreaterThan(0);
  for (const url of urls) {
    expect(decodeURIComponent(url)).not.toContain(linkId);
    expect(url).not.toContain(linkId.split('.').at(-1));
    expect(url).not.toContain(parseLinkId(linkId).approvalId);
  }
  return entries.map((e) => e.url);
}

/** Presses Tab until the focused element is the button `label` (keyboard only); fails if never. */
async function tabTo(page: Page, label: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement;
      return el instanceof HTMLButtonElement ? el.textContent : undefined;
    });
    if (focused === label) return;
  }
  throw new Error(`Tab never reached the button ${label}`);
}

/** Where the screenshots go (printed once), for a person to look at. */
const SCREENSHOTS =
  process.env.PLANGATE_SCREENSHOT_DIR ?? join(tmpdir(), 'plangate-approval-page-screenshots');

/** A full-page screenshot of `page` as `name`.png in {@link SCREENSHOTS}. */
async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  process.stdout.write(`screenshot: ${path}\n`);
}

/** No horizontal scroll: the page is no wider than its viewport. */
const pageFits = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

/**
 * A plan of shell steps whose commands and contracts the page must show: one long enough to
 * wrap inside its box on a phone, and a destructive one with its own gate.
 */
function shellPlan(id: string) {
  return {
    id,
    version: 1,
    objective: 'Collect the regional figures, write the report, and clean up the scratch directory',
    sizePolicy: { minSteps: 1 },
    approval: { approvers: APPROVERS, allowAutoApprove: false, timeoutSeconds: 3600 },
    steps: SHELL_STEPS.map((step) => ({ ...step, dependsOn: [...step.dependsOn] })),
  };
}

const SHELL_STEPS = [
  {
    id: 'collect',
    description: 'Collect the figures into figures.txt',
    dependsOn: [],
    tool: 'shell',
    args: { command: 'mkdir -p scratch && printf "north 12\\nsouth 7\\n" > figures.txt' },
    contract: { kind: 'command', command: 'grep -q north figures.txt' },
  },
  {
    id: 'report',
    description: 'Add the figures up into report.txt',
    dependsOn: ['collect'],
    tool: 'shell',
    args: {
      command:
        'awk \'{ total += $2 } END { print "total", total }\' figures.txt > report.txt && cat report.txt # one long line that must scroll inside its own box',
    },
    contract: { kind: 'command', command: 'grep -q "total 19" report.txt' },
  },
  {
    id: 'cleanup',
    description: 'Remove the scratch directory',
    dependsOn: ['report'],
    tool: 'shell',
    requiresApproval: true,
    args: { command: 'rm -rf ./scratch' },
    contract: { kind: 'command', command: 'test ! -e scratch' },
  },
] as const;

/** Every step's command and contract is on the page, visible (in the card of its step). */
async function expectEveryCommandVisible(page: Page, steps: readonly (typeof SHELL_STEPS)[number][]) {
  for (const step of steps) {
    const card = page.locator(`article#step-${step.id}`);
    const texts = await card.locator('pre').allTextContents();
    expect(texts, step.id).toContain(step.args.command);
    expect(texts, step.id).toContain(step.contract.command);
    for (const text of [step.args.command, step.contract.command])
      expect(await card.locator('pre', { hasText: text }).first().isVisible(), `${step.id}: ${text}`).toBe(
        true,
      );
  }
}

describe.skipIf(!CHROMIUM)('the approval page in Chromium', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-browser-'));
    const paths = storePaths(join(dir, 'store'));
    const issuer = new LocalIssuer();
    hostedUi = await LocalHostedUi.start({ issuer, clientId: CLIENT_ID, users: USERS });
    platform = await LocalPlatform.start({
      paths,
      cwd: dir,
      identity: {
        mode: 'aws',
        principals: [SUBMITTER],
        jwt: { issuer: issuer.issuer, audience: [CLIENT_ID], jwks: issuer.jwks },
      },
      signIn: hostedUi,
      onGate: (n, link, written) => {
        emails.set(n.approvalId, written);
        sharedLinks.set(n.approvalId, link);
        gates.push(n);
      },
      mailDir: join(dir, 'mail'),
    });
    signer = new LinkSigner(await loadSigningKey(paths));
    browser = await chromium.launch({
      executablePath: CHROMIUM as string,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
    await hostedUi?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fits a phone, names who answers, shows the digest, and holds no token or key', async () => {
    const gate = await gateOf('phone');
    const taskToken = await storedToken(gate);
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    const page = await context.newPage();
    const visited = visitedUrls(page);
    const link = await emailedLink(gate, 'ana@example.test');
    await page.goto(link);
    await page.getByRole('heading', { name: 'Approve this plan?' }).waitFor({ timeout: 10_000 });
    const history = await expectNoLinkInHistory(page, link, visited);
    // The tab's history is its blank start and the page: the link was redirected away, never kept.
    expect(visited).toEqual([page.url()]);
    expect(history).toEqual(['about:blank', page.url()]);
    expect(await page.evaluate(() => window.history.length)).toBe(history.length);
    await page.getByText('You are answering as ana@example.test').waitFor({ timeout: 10_000 });
    await page.getByText(gate.plan.digest).waitFor({ timeout: 10_000 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectCleanPage(page, gate, taskToken);
    expect(await page.content()).not.toContain(
      (await loadSigningKey(storePaths(join(dir, 'store')))).toString('base64url'),
    );
    await context.close();
  });

  it('shows a second version its graph and what changed since the first, on a phone, names as text only', async () => {
    await submit(plan('versions'));
    const hostile = 'Check "]; click s1 call alert(1) %% </pre><script>window.pwned = 1</script> #35;';
    const second = {
      ...plan('versions'),
      version: 2,
      steps: [
        { ...echoStep('collect'), args: { message: 'collect', value: 2 } },
        echoStep('verify', ['collect'], hostile),
        {
          ...echoStep('report', ['verify']),
          contract: {
            kind: 'assert',
            expression: 'output.message = "report" and $length(output.message) = 6',
          },
        },
      ],
    };
    const gate = await submit(second);
    const taskToken = await storedToken(gate);
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    const page = await context.newPage();
    await page.goto(await emailedLink(gate, 'ana@example.test'));
    await page.getByRole('heading', { name: 'Changes since v1' }).waitFor({ timeout: 10_000 });
    const changes = page.locator('h2 + p + ul > li');
    expect(await changes.allTextContents()).toEqual([
      `Added verify: ${hostile}`,
      // Old → new values, read from each version's PLAN_CREATED (the graph holds fingerprints only).
      'Changed collect: args {"message":"collect"} → {"message":"collect","value":2}',
      'Changed report: contract {"expression":"output.message = \\"report\\"","kind":"assert"} → {"expression":"output.message = \\"report\\" and $length(output.message) = 6","kind":"assert"}; now waits for verify; no longer waits for collect',
    ]);
    // The graph is a picture drawn on the server: an inline SVG, hidden from screen readers
    // (the list is its text), each node its step's id then its name, the hostile one as text.
    const svg = page.locator('svg.plan-graph');
    expect(await svg.isVisible()).toBe(true);
    expect(await svg.evaluate((el) => el instanceof SVGSVGElement && el.getAttribute('aria-hidden'))).toBe(
      'true',
    );
    expect(await svg.locator('g.node').count()).toBe(3);
    expect(await svg.locator('g.edge').count()).toBe(2);
    expect((await svg.locator('text').allTextContents()).join(' ')).toContain('window.pwned');
    expect(
      await svg.evaluate((el) => el.getBoundingClientRect().right <= document.documentElement.clientWidth),
    ).toBe(true);
    expect(
      await page.getByRole('list', { name: 'Steps and what each waits for' }).locator('li').allTextContents(),
    ).toEqual([
      'collect Echo collect',
      `verify ${hostile} (after collect)`,
      'report Echo report (after verify)',
    ]);
    expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectCleanPage(page, gate, taskToken);
    // Nothing of the graph or the changes takes focus; Tab goes through the steps' fields to Approve.
    await tabTo(page, 'Approve');
    await page.keyboard.press('Enter');
    await page.getByText('Your answer (APPROVE) was recorded.').waitFor({ timeout: 10_000 });
    await context.close();
  });

  it('approves a step gate (a step with requiresApproval) on its own page, and the step then runs', async () => {
    const gated = {
      ...plan('step-gate'),
      steps: [echoStep('collect'), { ...echoStep('report', ['collect']), requiresApproval: true }],
    };
    const planGate = await submit(gated);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await emailedLink(planGate, 'ana@example.test'));
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('Your answer (APPROVE) was recorded.').waitFor({ timeout: 10_000 });
    const stepGate = await waitForGate((g) => g.kind === 'step' && g.executionId === planGate.executionId);
    await page.goto(await emailedLink(stepGate, 'ben@example.test'));
    await page
      .getByRole('heading', { name: 'Approve this step before it runs?' })
      .waitFor({ timeout: 10_000 });
    await page.locator('#step-report').waitFor({ timeout: 10_000 });
    expect(await page.locator('#step-report h3').textContent()).toBe('report Echo report');
    await expectCleanPage(page, stepGate, await storedToken(stepGate));
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('Your answer (APPROVE) was recorded.').waitFor({ timeout: 10_000 });
    for (let i = 0; i < 400 && !(await journal(planGate)).some((e) => e.event === 'EXECUTION_COMPLETE'); i++)
      await new Promise((r) => setTimeout(r, 25));
    const events = await journal(planGate);
    expect(
      events
        .filter((e) => e.event === 'GATE_APPROVED')
        .map((e) => [e.details.gate, e.task_id, e.details.approver]),
    ).toEqual([
      ['plan', undefined, 'ana@example.test'],
      ['step', 'report', 'ben@example.test'],
    ]);
    expect(events.filter((e) => e.event === 'TASK_COMPLETED').map((e) => e.task_id)).toEqual([
      'collect',
      'report',
    ]);
    expect(events.at(-1)?.details.succeeded).toBe(true);
    await context.close();
  });

  it('works without JavaScript: Approve posts the form and the outcome is shown', async () => {
    const gate = await gateOf('no-script');
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const visited = visitedUrls(page);
    const link = await emailedLink(gate, 'ana@example.test');
    await page.goto(link);
    const cookies = await context.cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([
      ['plangate_page', true, 'Strict', new URL(page.url()).pathname],
    ]);
    expect(cookies[0]?.value).not.toContain(link.split('.').at(-1));
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('Your answer (APPROVE) was recorded.').waitFor({ timeout: 10_000 });
    expect((await decisions(gate)).map((e) => e.details.approver)).toEqual(['ana@example.test']);
    await expectNoLinkInHistory(page, link, visited);
    // The back button, then the link again: the gate says it was answered, by whom and when.
    await page.goBack();
    await page.reload();
    await page
      .getByRole('heading', {
        name: /^Already answered by ana@example\.test at \d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
      })
      .waitFor({ timeout: 10_000 });
    expect(await page.getByRole('button').count()).toBe(0);
    expect(await page.content()).not.toContain(parseLinkId(gate.approvalId).approvalId);
    await expectNoLinkInHistory(page, link, visited);
    await context.close();
  });

  it("shows the deadline in the reader's chosen time zone, UTC beside it, with JavaScript off", async () => {
    const gate = await gateOf('time-zone');
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(await emailedLink(gate, 'ana@example.test'));
    const deadline = page.locator('dl.pg-people time');
    const before = (await deadline.textContent()) ?? '';
    await page.getByLabel('Show times in (IANA time zone)').fill('Asia/Tokyo');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.waitForURL(/\?tz=Asia%2FTokyo$/);
    const shown = (await page.locator('dl.pg-people time').textContent()) ?? '';
    expect(shown).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d Asia\/Tokyo \(\d\d:\d\d UTC\), in /);
    expect(shown).not.toBe(before);
    // Tokyo is 9 hours ahead of UTC, all year.
    const [, local, utc] = /(\d\d):\d\d Asia\/Tokyo \((\d\d):\d\d UTC\)/.exec(shown) ?? [];
    expect((Number(utc) + 9) % 24).toBe(Number(local));
    // Nonsense is ignored: the page keeps its default zone.
    await page.goto(`${page.url().split('?')[0]}?tz=${encodeURIComponent('<script>')}`);
    expect(await page.locator('dl.pg-people time').textContent()).not.toContain('script');
    await context.close();
  });

  it('is usable by keyboard alone: Tab to Reject’s reason, type it, Enter', async () => {
    const gate = await gateOf('keyboard');
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await emailedLink(gate, 'ben@example.test'));
    let focused = '';
    for (let i = 0; i < 200 && focused !== 'reason'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name ?? '');
    }
    expect(focused).toBe('reason');
    await page.keyboard.type('not this quarter');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Your answer (REJECT) was recorded.').waitFor({ timeout: 10_000 });
    expect((await decisions(gate)).map((e) => [e.event, e.details.reason])).toEqual([
      ['GATE_REJECTED', 'not this quarter'],
    ]);
    await context.close();
  });

  it('records one decision for a double click, and for two approvers clicking in two tabs at once', async () => {
    const doubled = await gateOf('double-click');
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await emailedLink(doubled, 'ana@example.test'));
    await page.getByRole('button', { name: 'Approve', exact: true }).dblclick();
    await page
      .getByText(/Your answer \(APPROVE\) was recorded\.|Already answered/)
      .first()
      .waitFor({ timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 500));
    expect(await decisions(doubled)).toHaveLength(1);

    const contested = await gateOf('two-tabs');
    const [tabA, tabB] = [await context.newPage(), await context.newPage()];
    await tabA.goto(await emailedLink(contested, 'ana@example.test'));
    await tabB.goto(await emailedLink(contested, 'ben@example.test'));
    await Promise.all([
      tabA.getByRole('button', { name: 'Approve', exact: true }).click(),
      tabB.getByRole('button', { name: 'Approve', exact: true }).click(),
    ]);
    for (const tab of [tabA, tabB])
      await tab
        .getByText(/Your answer \(APPROVE\) was recorded\.|Already answered/)
        .first()
        .waitFor({ timeout: 10_000 });
    const texts = [await tabA.textContent('body'), await tabB.textContent('body')];
    expect(texts.filter((t) => t?.includes('Your answer (APPROVE) was recorded.'))).toHaveLength(1);
    expect(texts.filter((t) => /Already answered by (ana|ben)@example\.test at /.test(t ?? ''))).toHaveLength(
      1,
    );
    expect(await decisions(contested)).toHaveLength(1);
    await context.close();
  });

  it('signs in on a shared link (hosted UI, code + PKCE): a signed-in approver not on the allowlist is refused clearly, an allowed one decides', async () => {
    const gate = await gateOf('sign-in');
    const link = sharedLinks.get(gate.approvalId) as string;
    expect(link).toBe(`${platform.url}/approvals/${encodeURIComponent(gate.approvalId)}`);
    /** Opens the shared link, answers Approve, and signs in at the hosted UI as `user`. */
    const approveSignedInAs = async (user: keyof typeof USERS, password = USERS[user]) => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const visited = visitedUrls(page);
      await page.goto(link);
      await page.getByText('You will be asked to sign in').waitFor({ timeout: 10_000 });
      await expectCleanPage(page, gate, await storedToken(gate));
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByRole('heading', { name: 'Sign in to answer the gate' }).waitFor({ timeout: 10_000 });
      expect(new URL(page.url()).origin).toBe(hostedUi.url);
      expect(new URL(page.url()).searchParams.get('code_challenge_method')).toBe('S256');
      await page.getByLabel('Email').fill(user);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      return { context, page, visited };
    };

    const wrongPassword = await approveSignedInAs('ben@example.test', 'guess');
    await wrongPassword.page.getByText('Incorrect username or password.').waitFor({ timeout: 10_000 });
    await wrongPassword.context.close();

    const mallory = await approveSignedInAs('mallory@example.test');
    await mallory.page
      .getByText("Not recorded: mallory@example.test is not one of this plan's approvers")
      .waitFor({ timeout: 10_000 });
    // Back on the callback page, its code and state gone from the address bar; no link anywhere.
    expect(mallory.page.url()).toBe(`${platform.url}/approvals/signed-in`);
    await expectNoLinkInHistory(mallory.page, link, mallory.visited);
    expect(await decisions(gate)).toEqual([]);
    expect(
      (await journal(gate))
        .filter((e) => e.event === 'GATE_ANSWER_REFUSED')
        .map((e) => [e.details.by, e.details.reason]),
    ).toEqual([['mallory@example.test', 'forbidden']]);
    await mallory.context.close();

    const ben = await approveSignedInAs('ben@example.test');
    await ben.page.getByText('Your answer (APPROVE) was recorded.').waitFor({ timeout: 10_000 });
    expect((await decisions(gate)).map((e) => [e.event, e.details.approver])).toEqual([
      ['GATE_APPROVED', 'ben@example.test'],
    ]);
    await ben.context.close();
  });

  it('says an expired link can no longer be answered (the timeout ladder rejected the gate) and changes nothing', async () => {
    const gate = await gateOf('expires', 1);
    await new Promise((r) => setTimeout(r, 2_200));
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(await emailedLink(gate, 'ana@example.test'));
    // Nobody answered in time: the gate's timeout ladder ended in REJECT 'timed out' (never approve).
    expect(response?.status()).toBe(409);
    await page.getByRole('heading', { name: 'Expired' }).waitFor({ timeout: 10_000 });
    await page
      .getByText(/^Nobody answered in time, so the gate rejected it at \d{4}-/)
      .waitFor({ timeout: 10_000 });
    expect(await page.getByRole('button').count()).toBe(0);
    expect((await decisions(gate)).map((e) => [e.event, e.details.reason])).toEqual([
      ['GATE_REJECTED', 'timed out'],
    ]);
    await context.close();
  });
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 375, height: 740 },
  ])
    it(`shows every step's command and contract, the graph as an SVG, and fits ${viewport.width} px: plan gate and step gate`, async () => {
      const planGate = await submit(shellPlan(`cards-${viewport.width}`));
      const context = await browser.newContext({ viewport, isMobile: viewport.width < 500 });
      const page = await context.newPage();
      await page.goto(await emailedLink(planGate, 'ana@example.test'));
      await page.getByRole('heading', { name: 'Approve this plan?' }).waitFor({ timeout: 10_000 });
      await expectEveryCommandVisible(page, SHELL_STEPS);
      const svg = page.locator('svg.plan-graph');
      expect(await svg.evaluate((el) => el instanceof SVGSVGElement)).toBe(true);
      expect(await svg.isVisible()).toBe(true);
      // The destructive step is marked in the picture (⚠ and a red border), and so is its own gate.
      const cleanup = svg.locator('g.node', { hasText: 'cleanup' });
      expect(await cleanup.locator('text').first().textContent()).toBe('⚠ cleanup');
      expect(await cleanup.locator('path').first().getAttribute('stroke')).toBe('#b00020');
      expect(await cleanup.locator('text').allTextContents()).toContain('[asks approval first]');
      // Who asked, who may approve, the votes and the deadline (UTC, with the time left).
      const people = page.locator('dl.pg-people');
      expect(await people.textContent()).toMatch(/Submitted by\s*arn:aws:iam::123456789012:user\/submitter/);
      expect(await people.textContent()).toMatch(/May approve\s*ana@example\.test, ben@example\.test/);
      expect(await people.textContent()).toMatch(/Approvals\s*0 of 1/);
      expect(await people.locator('time').textContent()).toMatch(
        /^\d{4}-\d\d-\d\d \d\d:\d\d UTC, in (1 h|\d+ min)$/,
      );
      expect(await pageFits(page)).toBe(true);
      // The long command wraps inside its own box: none of it is scrolled out of sight.
      const long = page.locator('article#step-report pre', { hasText: 'one long line' });
      expect(await long.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
      await screenshot(page, `plan-gate-${viewport.width}`);

      // Approved, the plan runs to the step gate of the destructive step.
      await tabTo(page, 'Approve');
      await page.keyboard.press('Enter');
      await page
        .getByRole('heading', { name: 'Your answer (APPROVE) was recorded.' })
        .waitFor({ timeout: 10_000 });
      const stepGate = await waitForGate((g) => g.kind === 'step' && g.executionId === planGate.executionId);
      await page.goto(await emailedLink(stepGate, 'ben@example.test'));
      await page
        .getByRole('heading', { name: 'Approve this step before it runs?' })
        .waitFor({ timeout: 10_000 });
      await expectEveryCommandVisible(
        page,
        SHELL_STEPS.filter((s) => s.id === 'cleanup'),
      );
      const stepSvg = page.locator('svg.plan-graph');
      expect(await stepSvg.evaluate((el) => el instanceof SVGSVGElement)).toBe(true);
      expect(await stepSvg.isVisible()).toBe(true);
      // What already ran, with its evidence.
      expect(await page.locator('.pg-completed').textContent()).toMatch(/collect: passed command contract/);
      // Only this step's own fields: its command, no "skip".
      expect(
        await page
          .locator('form textarea[name^="arg."]')
          .evaluateAll((els) => els.map((e) => e.getAttribute('name'))),
      ).toEqual(['arg.cleanup.command']);
      expect(await page.locator('input[name="skipSteps"]').count()).toBe(0);
      expect(await pageFits(page)).toBe(true);
      await screenshot(page, `step-gate-${viewport.width}`);
      await context.close();
    });

  it('approves by keyboard alone, then says what happens next and links to the run’s progress', async () => {
    const gate = await submit(shellPlan('next'));
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(await emailedLink(gate, 'ben@example.test'));
    await tabTo(page, 'Approve');
    // The focus is visible: the focused button has an outline.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle)).toBe(
      'solid',
    );
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'What happens next' }).waitFor({ timeout: 10_000 });
    await page.getByText('The plan runs now.').waitFor({ timeout: 10_000 });
    await screenshot(page, 'outcome-1280');
    // Tab to the progress link and follow it.
    for (
      let i = 0;
      i < 10 &&
      (await page.evaluate(() => document.activeElement?.textContent)) !== "Follow the run's progress";
      i++
    )
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Progress of next v1' }).waitFor({ timeout: 10_000 });
    // The page reloads itself (no script) until the run is waiting at the cleanup step's own gate.
    await page.getByText(/\[Task 2\/3\] ✓/).waitFor({ timeout: 30_000 });
    await page.getByText('Waiting for the approval of step cleanup.').waitFor({ timeout: 30_000 });
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(1);
    await screenshot(page, 'progress-1280');
    await context.close();
  });

  it('changes a step and skips another through per-step fields, not JSON; a change with plain Approve is refused and kept', async () => {
    const gate = await submit(shellPlan('modify'));
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    const page = await context.newPage();
    await page.goto(await emailedLink(gate, 'ana@example.test'));
    expect(await page.getByLabel(/JSON/).count()).toBe(0);
    await page.getByText('Change or skip collect').click();
    const command = page.locator('textarea[name="arg.collect.command"]');
    expect(await command.inputValue()).toBe(SHELL_STEPS[0].args.command);
    const changed = 'mkdir -p scratch && printf "north 20\\nsouth 7\\n" > figures.txt';
    await command.fill(changed);
    // Plain Approve would silently drop the change: refused, nothing recorded, the change kept.
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('You changed the plan above').first().waitFor({ timeout: 10_000 });
    expect(await decisions(gate)).toEqual([]);
    expect(await page.locator('textarea[name="arg.collect.command"]').inputValue()).toBe(changed);
    await screenshot(page, 'modify-refused-375');
    await page.getByText('Change or skip cleanup').click();
    await page
      .locator('details', { hasText: 'Change or skip cleanup' })
      .getByLabel(/Skip this step/)
      .check();
    await page.getByRole('button', { name: 'Approve with my changes' }).click();
    // The change is a revision: it goes back to the gate, and approvals count for it as changed.
    await page.getByText('Your changes were recorded as revision 1.').waitFor({ timeout: 10_000 });
    expect(await decisions(gate)).toEqual([]);
    await page.goto(await emailedLink(gate, 'ana@example.test'));
    await page
      .getByText(/skips cleanup/)
      .first()
      .waitFor({ timeout: 10_000 });
    expect(await page.content()).toContain('figures.txt');
    await screenshot(page, 'revision-375');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page
      .getByText(/The plan runs now, with new arguments for collect and without cleanup\./)
      .waitFor({ timeout: 10_000 });
    expect((await decisions(gate)).map((e) => e.details.modifications)).toEqual([
      { argOverrides: { collect: { command: changed } }, skipSteps: ['cleanup'] },
    ]);
    await context.close();
  });
});
