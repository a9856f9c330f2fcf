/**
 * Policy bypass attempts through the real HTTP edge (`plangate serve`'s platform: the local API
 * Gateway, the Plans and Approvals Lambda handlers, dynalite, the engine) under the worked
 * organisation policy (examples/policies/org): two sre approvers for anything destructive,
 * Lambda only for deployers, gates that wait a day at most, no step reaching the quarantined host.
 *
 * - widening the plan's own approval block: the author's friend as the only approver, quorum 1,
 *   allowAutoApprove, a longer timeout, the author among the approvers;
 * - forged groups: an answer claiming `sre` in its body, a header, a `by` field, a query string;
 * - changed args after approval: a host handed on by an earlier step (in many spellings), or put
 *   in by an approver's modification at the gate, reaching the quarantined host at run time;
 * - host spellings written in the plan: the http tool's URL (a trailing dot, `%2E`, `。`, `．`,
 *   full-width letters, a tab, `https:host`, `https:/host`) and shell network programs (curl
 *   without a scheme, quoting, a variable, `--proxy`, wget, ssh, scp, rsync, git, `/dev/tcp`);
 * - command spellings: `kubectl` quoted, escaped, substituted or read from a variable, submitted
 *   by someone outside sre;
 * - Lambda by another route: `aws lambda invoke`, the invoke API over http, a function URL;
 * - ladders: one-day rungs that add up to more than a day;
 * - submitting as another principal: a deployer named in the body, a header, a query string;
 * - what runs is not what was approved: a gated `ls` revised at the plan gate into a destructive
 *   call (in many spellings, an env value included), or a gated call a value filled in at run time
 *   makes destructive (`find dir $OPT` with `-delete`, quoted, braced, inside `bash -c`, …);
 * - names spelled otherwise: the plan's forbidden approver and its submitter in another case, with
 *   the mailbox's trailing dot (a header carries bytes: the full-width spellings IDNA maps are
 *   tests/e2e/principal-names.e2e.test.ts's);
 * - enforcement levels (their own platform): a soft-mandatory rule overridden by people outside its
 *   group (a group claimed in a header or the body included), with no usable reason (empty, blank,
 *   501 characters, a newline, bidi or control characters), or by the submitter at her own gate; a
 *   hard rule overridden by the override group;
 * - configuration that would silently not apply: the rule in a subfolder, `org.cedar.txt`,
 *   `ORG.CEDAR`, a hidden file, a stray file beside it, an attribute or level that does not exist,
 *   a soft rule nobody may override, a malformed groups or people file: each directory is refused
 *   whole or loaded with the rule in force (accepted: it loads without the rule);
 *
 * An attempt is accepted when the gate completes, the plan is submitted, or the step's tool runs,
 * against the policy. Controls: two sre approvals complete a destructive gate; a deployer submits;
 * an incident commander's override with a reason releases a soft gate and a soft submission.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { POLICY_OVERRIDE_HEADER } from '../../lib/launch/plans-api.ts';
import { PolicySet } from '../../lib/policy/policy-set.ts';
import { LOCAL_IDENTITY_HEADER } from '../../lib/runtime/api/http.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';

export interface PolicyBypassResult {
  readonly attempts: number;
  readonly accepted: number;
  readonly byKind: Record<string, { attempts: number; accepted: number }>;
  /** Refusals the journal holds as POLICY_DECISION (denials), at gates and at run time. */
  readonly denialsJournaled: number;
  /**
   * Controls: two sre approvals complete a destructive gate; a deployer's Lambda plan is submitted;
   * a gated call whose run-time value adds nothing (`find dir $OPT` with `-print`) runs on one approval per gate.
   */
  readonly controls: {
    readonly twoSreComplete: boolean;
    readonly deployerSubmits: boolean;
    readonly harmlessValueRuns: boolean;
    /** An incident commander's override, with a reason, releases a gate a soft rule holds. */
    readonly icOverridesGate: boolean;
    /** And lets a submission a soft rule refuses through. */
    readonly icOverridesSubmission: boolean;
  };
}

const SUBMITTER = 'carol';
const NOT_SRE = Array.from({ length: 80 }, (_, i) => `dev${i}@example.test`);

export async function policyBypassAttempts(repo: string): Promise<PolicyBypassResult> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-policy-bypass-'));
  const gates: ApprovalNotice[] = [];
  const platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    env: {},
    identity: { mode: 'header' },
    policy: await PolicySet.load(join(repo, 'examples/policies/org')),
    onGate: (notice) => gates.push(notice),
  });
  const call = (path: string, who: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${platform.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        [LOCAL_IDENTITY_HEADER]: who,
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const eventsOf = async (executionArn: string, reader = SUBMITTER): Promise<JournalRecord[]> =>
    (
      (await (await call(`/executions/${encodeURIComponent(executionArn)}/events`, reader)).json()) as {
        events: JournalRecord[];
      }
    ).events;
  const gateOf = async (planId: string, kind = 'plan', step?: string) => {
    for (let i = 0; i < 800; i++) {
      const gate = gates.find(
        (g) => g.plan.id === planId && g.kind === kind && (step === undefined || g.stepId === step),
      );
      if (gate) return gate;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no ${kind} gate for ${planId}`);
  };
  /** Submits a plan; accepted means 201 (a refusal by policy is 403, a malformed request 400). */
  const submit = async (
    plan: Record<string, unknown>,
    who = SUBMITTER,
    headers: Record<string, string> = {},
    query = '',
  ) => {
    const res = await call(`/plans${query}`, who, plan, headers);
    const body = (await res.json()) as { executionArn?: string };
    return { status: res.status, executionArn: body.executionArn };
  };
  const answer = async (
    gate: ApprovalNotice,
    who: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
    query = '',
  ) => {
    const res = await call(
      `/approvals/${encodeURIComponent(gate.approvalId)}${query}`,
      who,
      { digest: gate.plan.digest, decision: 'APPROVE', ...extra },
      headers,
    );
    return { status: res.status, body: (await res.json()) as { status?: string } };
  };

  const byKind: Record<string, { attempts: number; accepted: number }> = {};
  const tally = (kind: string, broke: boolean) => {
    byKind[kind] ??= { attempts: 0, accepted: 0 };
    const entry = byKind[kind];
    entry.attempts++;
    if (broke) entry.accepted++;
  };
  let denialsJournaled = 0;
  const countDenials = (events: readonly JournalRecord[]) => {
    denialsJournaled += events.filter(
      (e) => e.event === 'POLICY_DECISION' && e.details.decision === 'deny',
    ).length;
  };
  try {
    // 1. Widening the plan's own approval block.
    const friendOnly = destructivePlan('bypass-friend', {
      approvers: ['friend'],
      quorum: 1,
      allowAutoApprove: true,
    });
    const friend = await submit(friendOnly);
    const friendGate = await gateOf('bypass-friend');
    const friendVote = await answer(friendGate, 'friend');
    tally(
      'widened approval block: the friend as the only approver, quorum 1',
      friendVote.body.status === 'decided',
    );
    const selfListed = await submit(
      destructivePlan('bypass-self-listed', { approvers: [SUBMITTER, 'friend'], quorum: 1 }),
    );
    const selfGate = await gateOf('bypass-self-listed');
    for (const extra of [
      {},
      {
        decision: 'APPROVE_WITH_MODIFICATIONS',
        skipSteps: [] as string[],
        argOverrides: { wipe: { command: 'true' } },
      },
    ])
      tally(
        'widened approval block: the author among the approvers',
        (await answer(selfGate, SUBMITTER, extra)).body.status === 'decided',
      );
    for (const approval of [
      { timeoutSeconds: 86_401 },
      { timeoutSeconds: 31_536_000 },
      { timeoutSeconds: 604_800, remindAfterSeconds: 3600 },
      { timeoutSeconds: 172_800, escalateTo: [{ approvers: ['sam'], quorum: 1 }] },
      { timeoutSeconds: 90_000, quorum: 5 },
    ])
      for (const id of ['bypass-wait-a', 'bypass-wait-b'])
        tally(
          'widened approval block: a longer wait than policy allows',
          (await submit(echoPlan(`${id}-${approval.timeoutSeconds}`, { approval }))).status === 201,
        );
    // Non-sre approvers, one after another, each trying to complete a destructive gate.
    const crowd = await submit(destructivePlan('bypass-crowd', { quorum: 1 }));
    const crowdGate = await gateOf('bypass-crowd');
    for (const who of NOT_SRE)
      tally('a quorum of people outside sre', (await answer(crowdGate, who)).body.status === 'decided');

    // 2. Forged groups: whatever the request says, only a verified token or the groups file counts.
    const forged = await submit(destructivePlan('bypass-forged', { quorum: 1 }));
    const forgedGate = await gateOf('bypass-forged');
    const forgeries: [string, Record<string, unknown>, Record<string, string>, string][] = [
      ['groups in the body', { groups: ['sre'] }, {}, ''],
      ['cognito:groups in the body', { 'cognito:groups': '[sre]' }, {}, ''],
      ['a by field naming an sre member', { by: 'sam' }, {}, ''],
      ['a groups header', {}, { 'x-plangate-groups': 'sre', 'cognito-groups': 'sre' }, ''],
      ['a query string naming the group and an sre member', {}, {}, '?groups=sre&as=sam'],
    ];
    let voter = 0;
    for (const [name, extra, headers, query] of forgeries)
      for (let i = 0; i < 16; i++) {
        const who = NOT_SRE[voter++ % NOT_SRE.length] as string;
        const outcome = await answer(forgedGate, who, extra, headers, query);
        tally(`forged groups: ${name}`, outcome.body.status === 'decided');
      }

    // 3. Changed args after approval: the quarantined host at run time.
    const spellings = [
      'quarantine.example.net',
      'QUARANTINE.EXAMPLE.NET',
      'quarantine.example.net:8443',
      'user@quarantine.example.net',
      'Quarantine.Example.Net:443',
      'ops:secret@quarantine.example.net',
    ];
    for (const [i, host] of spellings.entries()) {
      const id = `bypass-handed-${i}`;
      const run = await submit(handedOnPlan(id, host));
      // Refused at submission (a reference may not choose a URL's host) is refused too.
      if (run.status !== 201) {
        tally('changed args: a host handed on by an earlier step', false);
        continue;
      }
      await answer(await gateOf(id), 'sam');
      const events = await untilDone(eventsOf, run.executionArn as string, 'fetch');
      countDenials(events);
      tally('changed args: a host handed on by an earlier step', ranTool(events, 'fetch'));
    }
    for (const [i, host] of spellings.entries()) {
      const id = `bypass-handed-env-${i}`;
      const run = await submit(handedOnPlan(id, host, 'shell'));
      await answer(await gateOf(id), 'sam');
      const events = await untilDone(eventsOf, run.executionArn as string, 'fetch');
      countDenials(events);
      tally(
        "changed args: a host handed on by an earlier step, through a shell step's env",
        ranTool(events, 'fetch'),
      );
    }
    for (const [i, url] of [
      'https://quarantine.example.net/x',
      'http://QUARANTINE.example.net/',
      'https://a:b@quarantine.example.net:9/',
    ].entries()) {
      const id = `bypass-modified-${i}`;
      const run = await submit(handedOnPlan(id, 'status.example.org', 'literal'));
      const gate = await gateOf(id);
      const modified = await call(`/approvals/${encodeURIComponent(gate.approvalId)}`, 'sam', {
        digest: gate.plan.digest,
        decision: 'APPROVE_WITH_MODIFICATIONS',
        skipSteps: [],
        argOverrides: { fetch: { url } },
      });
      const revision = ((await modified.json()) as { digest?: string }).digest as string;
      await call(`/approvals/${encodeURIComponent(gate.approvalId)}`, 'sue', {
        digest: revision,
        decision: 'APPROVE',
      });
      const events = await untilDone(eventsOf, run.executionArn as string, 'fetch');
      countDenials(events);
      tally("changed args: an approver's modification at the gate", ranTool(events, 'fetch'));
    }

    // 5. What runs is not what was approved: a revision at the gate, or a value filled in at run
    // time, makes a gated call destructive; one approval from outside sre per gate. Accepted when
    // the call ran.
    const throughGates = async (
      id: string,
      plan: Record<string, unknown>,
      revision?: Record<string, Record<string, unknown>>,
    ): Promise<boolean> => {
      const run = await submit(plan);
      const planGate = await gateOf(id);
      if (revision) {
        const modified = await call(
          `/approvals/${encodeURIComponent(planGate.approvalId)}`,
          'dev0@example.test',
          {
            digest: planGate.plan.digest,
            decision: 'APPROVE_WITH_MODIFICATIONS',
            skipSteps: [],
            argOverrides: revision,
          },
        );
        const digest = ((await modified.json()) as { digest?: string }).digest;
        if (digest === undefined) return false;
        const approved = await call(
          `/approvals/${encodeURIComponent(planGate.approvalId)}`,
          'dev1@example.test',
          {
            digest,
            decision: 'APPROVE',
          },
        );
        if (((await approved.json()) as { status?: string }).status !== 'decided') return false;
      } else if ((await answer(planGate, 'dev1@example.test')).body.status !== 'decided') return false;
      const stepGate = await gateOf(id, 'step', 'act');
      const stepVote = await call(
        `/approvals/${encodeURIComponent(stepGate.approvalId)}`,
        'dev2@example.test',
        {
          digest: stepGate.revision?.digest ?? stepGate.plan.digest,
          decision: 'APPROVE',
        },
      );
      if (((await stepVote.json()) as { status?: string }).status !== 'decided') return false;
      const events = await untilDone(eventsOf, run.executionArn as string, 'act');
      countDenials(events);
      return ranTool(events, 'act');
    };
    const revisions: Record<string, unknown>[] = [
      { command: 'rm -rf scratch-dir' },
      { command: 'find scratch-dir -delete' },
      { command: 'ls scratch-dir; rm -rf scratch-dir' },
      { command: 'ls scratch-dir && find scratch-dir -delete' },
      { command: "bash -c 'rm -rf scratch-dir'" },
      { command: 'find scratch-dir $OPT', env: { OPT: '-delete' } },
      { command: 'find scratch-dir "${OPT}"', env: { OPT: '-delete' } },
    ];
    for (const [i, args] of revisions.entries()) {
      const id = `bypass-revised-${i}`;
      tally(
        'what runs: a revision made at the gate',
        await throughGates(id, gatedPlan(id, { command: 'ls scratch-dir' }), { act: args }),
      );
    }
    const runTimeValues: [string, string][] = [
      ['find scratch-dir $OPT', '-delete'],
      ['find scratch-dir ${OPT}', '-delete'],
      ['find scratch-dir "$OPT"', '-delete'],
      ['find scratch-dir ${OPT:-}', '-delete'],
      ["bash -c 'find scratch-dir $OPT'", '-delete'],
      ['sh -c "find scratch-dir $OPT"', '-delete'],
      ['echo "$(find scratch-dir $OPT)"', '-delete'],
      ['find scratch-dir -maxdepth 1 $OPT', '-delete'],
    ];
    for (const [i, [command, value]] of runTimeValues.entries()) {
      const id = `bypass-value-${i}`;
      const plan = gatedPlan(id, { command, env: { OPT: '${steps.pick.message}' } }, value);
      tally('what runs: a value filled in at run time', await throughGates(id, plan));
    }

    // 3b. Host spellings written in the plan itself, reaching the quarantined host when the step runs.
    const approveEvery = async (id: string, stepGate: boolean) => {
      const gate = await gateOf(id);
      await answer(gate, 'sam');
      await answer(gate, 'sue');
      if (!stepGate) return;
      const own = await gateOf(id, 'step', 'fetch');
      await answer(own, 'sam');
      await answer(own, 'sue');
    };
    for (const [i, url] of HTTP_SPELLINGS.entries()) {
      const id = `bypass-http-spelling-${i}`;
      const run = await submit(fetchPlan(id, 'http', { method: 'GET', url, timeoutSeconds: 2 }));
      if (run.status !== 201) throw new Error(`${id}: not submitted (${run.status}): not a policy attempt`);
      await approveEvery(id, false);
      const events = await untilDone(eventsOf, run.executionArn as string, 'fetch');
      countDenials(events);
      tally('host spellings: the http tool', ranTool(events, 'fetch'));
    }
    for (const [i, args] of SHELL_SPELLINGS.entries()) {
      const id = `bypass-shell-spelling-${i}`;
      const run = await submit(fetchPlan(id, 'shell', args, true));
      if (run.status !== 201) throw new Error(`${id}: not submitted (${run.status}): not a policy attempt`);
      await approveEvery(id, true);
      const events = await untilDone(eventsOf, run.executionArn as string, 'fetch');
      countDenials(events);
      tally('host spellings: shell network programs', ranTool(events, 'fetch'));
    }

    // 3c. Command spellings: kubectl, however it is written, submitted by someone outside sre.
    for (const [i, args] of KUBECTL_SPELLINGS.entries())
      tally(
        'command spellings: kubectl outside sre',
        policyAccepted(await submit(fetchPlan(`bypass-kubectl-${i}`, 'shell', args, true)), args),
      );
    // 3d. Lambda by another route, submitted by someone outside deployers.
    for (const [i, [tool, args]] of LAMBDA_ROUTES.entries())
      tally(
        'Lambda by another route: the aws CLI, the invoke API, a function URL',
        policyAccepted(
          await submit(fetchPlan(`bypass-lambda-route-${i}`, tool, args, tool === 'shell'), 'mallory'),
          args,
        ),
      );
    // 3e. A ladder of one-day rungs: more than a day in all.
    for (const rungs of [1, 2, 5])
      tally(
        'ladders: one-day rungs adding up to more than a day',
        policyAccepted(
          await submit(
            echoPlan(`bypass-ladder-${rungs}`, {
              approval: {
                timeoutSeconds: 86_400,
                escalateTo: Array.from({ length: rungs }, (_, i) => ({ approvers: [`rung${i}`] })),
              },
            }),
          ),
          { rungs },
        ),
      );

    // 3f. Names spelled otherwise: a forbidden approver, or the submitter, in another case or
    // with the mailbox's trailing dot, answering a gate only their spelling would be refused at.
    const named = await submit(
      echoPlan('bypass-names', { approval: { forbiddenApprovers: ['mallory@example.test'] } }),
      'carol@example.test',
    );
    if (named.status !== 201) throw new Error(`the names plan was not submitted: ${named.status}`);
    const namedGate = await gateOf('bypass-names');
    for (const who of NAME_SPELLINGS)
      tally(
        'names: a forbidden approver or the submitter spelled otherwise',
        (await answer(namedGate, who)).body.status === 'decided',
      );
    countDenials(await eventsOf(named.executionArn as string, 'carol@example.test'));

    // 4. Submitting as another principal (a deployer) to use Lambda.
    const impostors: [string, Record<string, unknown>, Record<string, string>, string][] = [
      ['a submitter header', {}, { 'x-plangate-submitter': 'dora' }, ''],
      ['a query string', {}, {}, '?as=dora&submittedBy=dora'],
      ['groups claimed in a header', {}, { 'x-plangate-groups': 'deployers' }, ''],
      ['the owner field', { owner: 'dora' }, {}, ''],
      ['the tool only in a rollback', {}, {}, 'rollback'],
      ['the tool only in a contract', {}, {}, 'contract'],
    ];
    let n = 0;
    for (const [name, extra, headers, query] of impostors)
      for (const who of ['mallory', 'dev0@example.test', 'sam', 'audrey', 'friend']) {
        const plan =
          query === 'rollback'
            ? { ...echoPlan(`bypass-impostor-${n++}`), ...extra }
            : query === 'contract'
              ? lambdaInContract(`bypass-impostor-${n++}`)
              : { ...lambdaPlan(`bypass-impostor-${n++}`), ...extra };
        if (query === 'rollback')
          (plan.steps as Record<string, unknown>[])[0] = {
            ...(plan.steps as Record<string, unknown>[])[0],
            rollback: { tool: 'lambda', args: { functionName: 'plangate-undo' } },
          };
        const submitted = await submit(
          plan,
          who,
          headers,
          query === 'rollback' || query === 'contract' ? '' : query,
        );
        tally(`submitting as another principal: ${name}`, submitted.status === 201);
      }

    // 6. Enforcement levels: a soft-mandatory rule gives way only to its override group, with a
    // one-line reason, never for the submitter's own plan; a hard rule never does.
    const enforcement = await enforcementAttempts(dir, tally);
    denialsJournaled += enforcement.denialsJournaled;

    // 7. Configuration that would silently not apply: a policy directory whose rule cannot be in
    // force as written is refused whole, never loaded without it.
    for (const [i, [name, files]] of MISCONFIGURED.entries())
      tally(`configuration: ${name}`, await loads(join(dir, `misconfigured-${i}`), files));

    // Controls.
    const harmlessValueRuns = await throughGates(
      'bypass-control-value',
      gatedPlan(
        'bypass-control-value',
        { command: 'find scratch-dir $OPT', env: { OPT: '${steps.pick.message}' } },
        '-print',
      ),
    );
    await answer(crowdGate, 'sam');
    const completed = await answer(crowdGate, 'sue');
    const deployer = await submit(lambdaPlan('bypass-control-deployer'), 'dora');
    for (const arn of [friend.executionArn, selfListed.executionArn, crowd.executionArn, forged.executionArn])
      if (arn) countDenials(await eventsOf(arn));
    const attempts = Object.values(byKind).reduce((sum, k) => sum + k.attempts, 0);
    const accepted = Object.values(byKind).reduce((sum, k) => sum + k.accepted, 0);
    return {
      attempts,
      accepted,
      byKind,
      denialsJournaled,
      controls: {
        twoSreComplete: completed.body.status === 'decided',
        icOverridesGate: enforcement.icOverridesGate,
        icOverridesSubmission: enforcement.icOverridesSubmission,
        deployerSubmits: deployer.status === 201,
        harmlessValueRuns,
      },
    };
  } finally {
    await platform.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The org's one forbid, as it would be written. */
const ECHO_FORBID =
  '@id("no-echo")\nforbid (principal, action == Action::"SubmitPlan", resource) when { resource.tools.contains("echo") };\n';
const BASELINE = 'permit (principal, action, resource);\n';

/** Policy directories (path → content) in which a rule would not apply as written. */
const MISCONFIGURED: readonly (readonly [string, Readonly<Record<string, string>>])[] = [
  ['the rule in a subfolder', { 'base.cedar': BASELINE, 'org/org.cedar': ECHO_FORBID }],
  ['the rule in org.cedar.txt', { 'base.cedar': BASELINE, 'org.cedar.txt': ECHO_FORBID }],
  ['the rule in ORG.CEDAR', { 'base.cedar': BASELINE, 'ORG.CEDAR': ECHO_FORBID }],
  ['the rule in a hidden file', { 'base.cedar': BASELINE, '.org.cedar': ECHO_FORBID }],
  ['a stray file beside the rules', { 'base.cedar': BASELINE, 'org.cedar': ECHO_FORBID, 'notes.txt': 'x' }],
  [
    'a rule naming an attribute that does not exist',
    { 'base.cedar': BASELINE, 'org.cedar': ECHO_FORBID.replace('resource.tools', 'resource.toolz') },
  ],
  [
    'an enforcement level that does not exist',
    { 'base.cedar': BASELINE, 'org.cedar': `@enforcement("log-only")\n${ECHO_FORBID}` },
  ],
  [
    'a soft rule nobody may override',
    { 'base.cedar': BASELINE, 'org.cedar': `@enforcement("soft-mandatory")\n${ECHO_FORBID}` },
  ],
  [
    'a groups file that is not a list per group',
    { 'base.cedar': BASELINE, 'org.cedar': ECHO_FORBID, 'groups.json': '{"sre": "sam,sue"}' },
  ],
  [
    'a people file naming one principal for two persons',
    {
      'base.cedar': BASELINE,
      'org.cedar': ECHO_FORBID,
      'people.json': JSON.stringify({
        'a@example.com': ['arn:aws:iam::123456789012:user/x'],
        'b@example.com': ['arn:aws:iam::123456789012:user/x'],
      }),
    },
  ],
];

/**
 * Whether a policy directory of these files loads without its rule in force (the attempt is then
 * accepted: the org's rule silently does not apply). Refused whole, or loaded with it, holds.
 */
async function loads(dir: string, files: Readonly<Record<string, string>>): Promise<boolean> {
  for (const [file, text] of Object.entries(files)) {
    await mkdir(join(dir, file, '..'), { recursive: true });
    await writeFile(join(dir, file), text);
  }
  return PolicySet.load(dir).then(
    (set) => !set.policies.some((p) => p.id === 'no-echo'),
    () => false,
  );
}

/** The policies of the enforcement-level attempts: one soft rule at submission, one at gates, one hard. */
const ENFORCEMENT_POLICIES = `permit (principal, action, resource);

@id("no-self-approval")
forbid (principal, action in [Action::"ApprovePlanGate", Action::"ModifyPlanGate", Action::"ApproveStepGate"], resource)
when { resource.submitter != "" && principal.name == resource.submitter };

@id("echo-needs-an-incident")
@enforcement("soft-mandatory")
@overrideBy("incident-commanders")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.tools.contains("echo") };

@id("two-sre-for-destructive")
@enforcement("soft-mandatory")
@overrideBy("incident-commanders")
forbid (principal, action == Action::"CompleteGate", resource)
when { resource.destructive }
unless { resource.hasTag("sre") && resource.getTag("sre") >= 2 };

@id("no-lambda-ever")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.tools.contains("lambda") };
`;

const GOOD_REASON = 'INC-4521: the build cache fills the disk, the on-call sre is unreachable';

/** Override reasons that are not one line of text of a sensible length: refused, at any level. */
const BAD_REASONS = [
  '',
  '   ',
  'x'.repeat(501),
  'cache\nfull',
  'cache \u202efull',
  'cache \u2066full',
  'bell\u0007',
];

/**
 * Enforcement levels on their own platform (the policies above; carol, ivy and ian are incident
 * commanders, sam is sre): overrides by people outside the group, without a usable reason, of a
 * hard rule, and of the submitter's own gate. Accepted: a gate decided, a plan submitted.
 */
export async function enforcementAttempts(
  dir: string,
  tally: (kind: string, broke: boolean) => void,
): Promise<{ icOverridesGate: boolean; icOverridesSubmission: boolean; denialsJournaled: number }> {
  const policies = join(dir, 'enforcement-policies');
  await mkdir(policies, { recursive: true });
  await writeFile(join(policies, 'org.cedar'), ENFORCEMENT_POLICIES);
  await writeFile(
    join(policies, 'groups.json'),
    JSON.stringify({ 'incident-commanders': ['ivy', 'ian', 'carol'], sre: ['sam', 'sue'] }),
  );
  const gates: ApprovalNotice[] = [];
  const platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'enforcement-store')),
    cwd: dir,
    env: {},
    identity: { mode: 'header' },
    policy: await PolicySet.load(policies),
    onGate: (notice) => gates.push(notice),
  });
  const post = async (path: string, who: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${platform.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [LOCAL_IDENTITY_HEADER]: who, ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { status?: string; executionArn?: string } };
  };
  const override = (reason: string) => ({ [POLICY_OVERRIDE_HEADER]: reason });
  try {
    // At submission: the soft rule refuses an echo plan unless an incident commander overrides it.
    let n = 0;
    const submitEcho = (who: string, headers: Record<string, string> = {}) =>
      post('/plans', who, echoPlan(`bypass-soft-${n++}`), headers);
    for (const who of ['mallory', 'sam', 'dev0@example.test', 'incident-commanders', 'Ivy', 'ivy2']) {
      tally('enforcement: a soft rule at submission, not overridden', (await submitEcho(who)).status === 201);
      tally(
        'enforcement: a soft rule at submission, overridden from outside its group',
        (await submitEcho(who, override(GOOD_REASON))).status === 201,
      );
      tally(
        'enforcement: a soft rule at submission, overridden from outside its group',
        (await submitEcho(who, { ...override(GOOD_REASON), 'x-plangate-groups': 'incident-commanders' }))
          .status === 201,
      );
    }
    // Header values are bytes: the reasons a header can carry.
    for (const reason of BAD_REASONS.filter((r) => /^[\x20-\x7e]*$/.test(r)))
      tally(
        'enforcement: an override without a usable reason',
        (await submitEcho('ivy', override(reason))).status === 201,
      );
    for (const who of ['ivy', 'carol'])
      tally(
        'enforcement: a hard rule overridden',
        (await post('/plans', who, lambdaPlan(`bypass-hard-${n++}`), override(GOOD_REASON))).status === 201,
      );

    // At a gate: destructive content needs two sre unless an incident commander overrides.
    const held = await post('/plans', 'carol', destructivePlan('bypass-soft-gate', {}));
    if (held.status !== 201) throw new Error(`the soft gate's plan was not submitted: ${held.status}`);
    let gate: ApprovalNotice | undefined;
    for (let i = 0; i < 800 && !gate; i++) {
      gate = gates.find((g) => g.plan.id === 'bypass-soft-gate' && g.kind === 'plan');
      if (!gate) await new Promise((r) => setTimeout(r, 25));
    }
    if (!gate) throw new Error('no gate for bypass-soft-gate');
    const vote = (who: string, extra: Record<string, unknown> = {}) =>
      post(`/approvals/${encodeURIComponent((gate as ApprovalNotice).approvalId)}`, who, {
        digest: (gate as ApprovalNotice).plan.digest,
        decision: 'APPROVE',
        ...extra,
      });
    for (const who of ['mallory', 'sam', 'dev0@example.test', 'IVY'])
      for (const extra of [
        {},
        { override: { reason: GOOD_REASON } },
        { override: { reason: GOOD_REASON }, groups: ['incident-commanders'] },
      ])
        tally(
          'enforcement: a soft gate released from outside its group',
          (await vote(who, extra)).body.status === 'decided',
        );
    for (const reason of BAD_REASONS)
      tally(
        'enforcement: an override without a usable reason',
        (await vote('ivy', { override: { reason } })).body.status === 'decided',
      );
    tally(
      'enforcement: a soft gate released without an override',
      (await vote('ivy')).body.status === 'decided',
    );
    // The submitter is an incident commander: her override does not approve her own plan.
    tally(
      "enforcement: the submitter's override of her own gate",
      (await vote('carol', { override: { reason: GOOD_REASON } })).body.status === 'decided',
    );

    // Controls: an incident commander who has not voted yet, with a reason, releases the gate;
    // one lets an echo plan in.
    const released = await vote('ian', { override: { reason: GOOD_REASON } });
    const icOverridesGate = released.body.status === 'decided';
    if (!icOverridesGate) process.stderr.write(`the override control: ${JSON.stringify(released)}\n`);
    const icOverridesSubmission = (await submitEcho('ivy', override(GOOD_REASON))).status === 201;
    // The released plan goes on to its step gate: closing the platform while it gets there would
    // close the store under its handlers (LocalStack.close does not drain them).
    for (let i = 0; i < 800 && icOverridesGate; i++) {
      if (gates.some((g) => g.plan.id === 'bypass-soft-gate' && g.kind === 'step')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const events = (await (
      await fetch(
        `${platform.url}/executions/${encodeURIComponent(held.body.executionArn as string)}/events`,
        {
          headers: { accept: 'application/json', [LOCAL_IDENTITY_HEADER]: 'carol' },
        },
      )
    ).json()) as { events: JournalRecord[] };
    const denialsJournaled = events.events.filter(
      (e) => e.event === 'POLICY_DECISION' && e.details.decision === 'deny',
    ).length;
    return { icOverridesGate, icOverridesSubmission, denialsJournaled };
  } finally {
    await platform.close();
  }
}

/**
 * A submission the policy accepted (201); refused by the policy is 403. Anything else (the
 * validator's 400) never reached the policy: the attempt is not one, and the corpus is wrong.
 */
function policyAccepted(submitted: { status: number }, what: unknown): boolean {
  if (submitted.status !== 201 && submitted.status !== 403)
    throw new Error(`${JSON.stringify(what)}: answered ${submitted.status}, not a policy attempt`);
  return submitted.status === 201;
}

/** Waits until the step failed, completed or the run ended; the events so far. */
async function untilDone(
  eventsOf: (arn: string) => Promise<JournalRecord[]>,
  executionArn: string,
  step: string,
): Promise<JournalRecord[]> {
  for (let i = 0; i < 600; i++) {
    const events = await eventsOf(executionArn);
    if (
      events.some(
        (e) => e.task_id === step && (e.event === 'RECOVERY_ESCALATION' || e.event === 'TASK_COMPLETED'),
      )
    )
      return events;
    if (events.some((e) => e.event === 'EXECUTION_COMPLETE')) return events;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${executionArn}: ${step} never ended`);
}

/** The step's tool ran: it started and no policy decision stopped it before it failed or completed. */
function ranTool(events: readonly JournalRecord[], step: string): boolean {
  const own = events.filter((e) => e.task_id === step);
  const started = own.some((e) => e.event === 'TASK_STARTED');
  const denied = own.some((e) => e.event === 'POLICY_DECISION' && e.details.decision === 'deny');
  return started && !denied;
}

function destructivePlan(id: string, approval: Record<string, unknown>) {
  return {
    id,
    version: 1,
    objective: 'Remove the scratch directory of the last build',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false, ...approval },
    steps: [
      {
        id: 'wipe',
        description: 'Remove the scratch directory',
        tool: 'shell',
        args: { command: 'rm -rf ./scratch-dir' },
        requiresApproval: true,
        contract: { kind: 'command', command: 'test ! -e ./scratch-dir' },
      },
    ],
  };
}

function echoPlan(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    version: 1,
    objective: 'Echo one value and prove it was echoed',
    sizePolicy: { minSteps: 1 },
    steps: [
      {
        id: 'say',
        description: 'Echo hello',
        tool: 'echo',
        args: { message: 'hello' },
        contract: { kind: 'assert', expression: 'output.message = "hello"' },
      },
    ],
    ...extra,
  };
}

function lambdaPlan(id: string): Record<string, unknown> {
  return {
    id,
    version: 1,
    objective: 'Invoke the cache warmer once',
    sizePolicy: { minSteps: 1 },
    steps: [
      {
        id: 'warm',
        description: 'Invoke the cache warmer',
        tool: 'lambda',
        args: { functionName: 'plangate-cache-warmer' },
        contract: { kind: 'assert', expression: 'true' },
      },
    ],
  };
}

function lambdaInContract(id: string): Record<string, unknown> {
  const plan = echoPlan(id);
  (plan.steps as Record<string, unknown>[])[0] = {
    ...(plan.steps as Record<string, unknown>[])[0],
    contract: { kind: 'lambda', functionName: 'plangate-check' },
  };
  return plan;
}

/** An echo step hands on `value`; the gated step `act` runs `args` (a shell call). */
function gatedPlan(id: string, args: Record<string, unknown>, value = 'scratch-dir') {
  return {
    id,
    version: 1,
    objective: 'Pick a value, then act on the scratch directory with it',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false },
    steps: [
      {
        id: 'pick',
        description: 'Name the value',
        tool: 'echo',
        args: { message: value },
        outputs: ['message'],
        contract: { kind: 'assert', expression: '$exists(output.message)' },
      },
      {
        id: 'act',
        description: 'Act on the scratch directory',
        tool: 'shell',
        dependsOn: ['pick'],
        args,
        requiresApproval: true,
        onFail: { retries: 0, escalation: 'abort' },
        contract: { kind: 'assert', expression: 'true' },
      },
    ],
  };
}

const Q = 'quarantine.example.net';

/** URLs the http tool sends to the quarantined host, each spelled as fetch would read it. */
const HTTP_SPELLINGS = [
  `https://${Q}./x`,
  'https://quarantine%2Eexample.net/x',
  'https://quarantine。example.net/x',
  'https://quarantine．example．net/x',
  'https://ｑｕａｒａｎｔｉｎｅ.example.net/x',
  'https://quar\tantine.example.net/x',
  `https:${Q}/x`,
  `https:/${Q}/x`,
  'https://QUARANTINE.example.net../x',
  `https://a:b@${Q}.:9/x`,
];

/** Shell commands that reach the quarantined host (or a destination known only at run time). */
const SHELL_SPELLINGS: Record<string, unknown>[] = [
  `curl -sS --max-time 2 ${Q}/x`,
  `curl -sS --max-time 2 '${Q}'`,
  `c''url -sS --max-time 2 "https://${Q}/x"`,
  `curl -sS --max-time 2 --proxy ${Q}:3128 https://ok.example.com`,
  `curl -sS --max-time 2 -x ${Q.toUpperCase()}.:3128 https://ok.example.com`,
  `wget -q -T 2 -O- ${Q}`,
  `ssh -o ConnectTimeout=2 ops@${Q} uptime`,
  `scp -o ConnectTimeout=2 ./f ops@${Q}:/tmp/`,
  `rsync -a ./d ${Q}:/srv`,
  `git ls-remote https://${Q}/r.git`,
  `git clone git@${Q}:team/r.git`,
  `timeout 2 bash -c 'exec 3<>/dev/tcp/${Q}/80'`,
  `timeout 2 bash -c "curl -s ${Q}"`,
  'curl -sS --max-time 2 "$TARGET/x"',
  'curl -sS --max-time 2 $(echo quarantine.example.net)/x',
].map((command) => ({ command }));
SHELL_SPELLINGS.push({ command: 'curl -sS --max-time 2 "https://$TARGET/x"', env: { TARGET: `${Q}.` } });
SHELL_SPELLINGS.push({
  command: 'curl -sS --max-time 2 https://ok.example.com',
  env: { https_proxy: `${Q}:3128` },
});

/** The plan's forbidden approver and its submitter, as other spellings of the same mailboxes. */
const NAME_SPELLINGS = ['mallory@example.test', 'carol@example.test'].flatMap((mailbox) => {
  const [local, domain] = mailbox.split('@') as [string, string];
  return [
    mailbox,
    mailbox.toUpperCase(),
    `${local}@${domain.toUpperCase()}`,
    `${local[0]?.toUpperCase()}${local.slice(1)}@${domain}`,
    `${mailbox}.`,
    `${local}@${domain.toUpperCase()}.`,
  ];
});

/** kubectl, however a command spells it. */
const KUBECTL_SPELLINGS: Record<string, unknown>[] = [
  'kubectl get pods',
  'k\\ubectl get pods',
  "kube''ctl get pods",
  'kube""ctl get pods',
  "$'kube\\x63tl' get pods",
  '$(printf kube)ctl get pods',
  '`printf kubectl` get pods',
  '/usr/local/bin/kubectl get pods',
  'sudo -E kubectl get pods',
  'env -i kubectl get pods',
  'bash -c "kubectl get pods"',
  'timeout 5 nice kubectl get pods',
  'command kubectl get pods',
].map((command) => ({ command }));
KUBECTL_SPELLINGS.push({ command: '"$TOOL" get pods', env: { TOOL: 'kubectl' } });

/** Lambda by a route other than the lambda tool. */
const LAMBDA_ROUTES: [string, Record<string, unknown>][] = [
  ['shell', { command: 'aws lambda invoke --function-name plangate-cache-warmer out.json' }],
  ['shell', { command: 'aws --region eu-west-1 lambda invoke --function-name warm o.json' }],
  [
    'http',
    { method: 'POST', url: 'https://lambda.us-east-1.amazonaws.com/2015-03-31/functions/warm/invocations' },
  ],
  [
    'http',
    { method: 'POST', url: 'https://LAMBDA.us-east-1.amazonaws.com./2015-03-31/functions/warm/invocations' },
  ],
  ['http', { method: 'GET', url: 'https://abc123.lambda-url.eu-west-1.on.aws/' }],
  ['shell', { command: 'curl -sS https://abc123.lambda-url.eu-west-1.on.aws/' }],
];

/** One step `fetch` calling `tool` with `args` (its own gate when `gated`). */
function fetchPlan(id: string, tool: string, args: Record<string, unknown>, gated = false) {
  return {
    id,
    version: 1,
    objective: 'Fetch the status page the plan names',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false },
    steps: [
      {
        id: 'fetch',
        description: 'Fetch the status page',
        tool,
        args,
        requiresApproval: gated,
        onFail: { retries: 0, escalation: 'abort' },
        contract: { kind: 'assert', expression: 'true' },
      },
    ],
  };
}

/**
 * An echo step names a host; the next step fetches a URL built from it at run time: by the http
 * tool, by curl through the step's env (`"https://$HOST/status"`), or (`literal`) a URL written out.
 */
function handedOnPlan(id: string, host: string, fetcher: 'http' | 'shell' | 'literal' = 'http') {
  const fetch =
    fetcher === 'shell'
      ? {
          tool: 'shell',
          args: {
            command: 'curl -sS --max-time 2 "https://$HOST/status"',
            env: { HOST: '${steps.pick.message}' },
          },
        }
      : {
          tool: 'http',
          args: {
            method: 'GET',
            url: fetcher === 'literal' ? `https://${host}/status` : 'https://${steps.pick.message}/status',
            timeoutSeconds: 2,
          },
        };
  return {
    id,
    version: 1,
    objective: 'Fetch the status page an earlier step names',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false },
    steps: [
      {
        id: 'pick',
        description: 'Name the status page host',
        tool: 'echo',
        args: { message: host },
        outputs: ['message'],
        contract: { kind: 'assert', expression: '$exists(output.message)' },
      },
      {
        id: 'fetch',
        description: 'Fetch the status page',
        ...fetch,
        dependsOn: ['pick'],
        onFail: { retries: 0, escalation: 'abort' },
        contract: { kind: 'assert', expression: 'true' },
      },
    ],
  };
}
