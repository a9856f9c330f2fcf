/**
 * `npm run reliability`: the published reliability figures, in one run, written to
 * bench/results/reliability.json — approval attacks refused, concurrent decisions on one gate,
 * old versions never approvable, fuzzed plans through the front door, planted secrets searched for
 * everywhere, the destructive-command corpus in every place a plan holds a command, the corpus by
 * class (read-only, destructive, unknown, exfiltration), calls not proven read-only through
 * `plangate run --approve`, attempts to get around the platform's policy, values known only at run
 * time carrying code into commands and URLs, forged histories of the journal (rewritten and
 * re-chained, truncated, inserted, re-anchored with a forger's key) checked against the signed
 * anchors, and every kind of plan process trying every way out of its sandbox (the containment corpus).
 *
 *   npm run reliability [-- --plans N] [-- --seed S]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runApprovalAttacks } from './reliability/approval-attacks.ts';
import { containmentCorpus } from './reliability/containment.ts';
import { ATTEMPT_CLASSES } from './reliability/containment-attempts.ts';
import { corpusClasses } from './reliability/corpus-classes.ts';
import { CRASH_CONSISTENCY_GOAL, crashConsistency } from './reliability/crash-consistency.ts';
import { destructiveCommandCorpus } from './reliability/destructive-commands.ts';
import { forgeryCorpus } from './reliability/forgery.ts';
import { fuzzPlans } from './reliability/fuzz-plans.ts';
import { runOldVersionAttacks } from './reliability/old-versions.ts';
import { plantedSecrets } from './reliability/planted-secrets.ts';
import { policyBypassAttempts } from './reliability/policy-bypass.ts';
import { quorumModificationAttack } from './reliability/quorum-modification.ts';
import { runtimeInjectionCorpus } from './reliability/runtime-injection.ts';
import { selfApprovalThroughRun } from './reliability/self-approval.ts';
import { unattendedApprovalSample } from './reliability/unattended-approval.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { plans: { type: 'string' }, seed: { type: 'string' }, only: { type: 'string' } },
});
const plans = Number(values.plans ?? 100_000);
const seed = Number(values.seed ?? Date.now() % 1_000_000);
process.stdout.write(`seed ${seed} (rerun with --seed ${seed})\n`);
const RESULTS = path.join(REPO, 'bench/results/reliability.json');

// `--only crash-consistency`: that section alone, written into the figures of the last whole run.
if (values.only !== undefined) {
  if (values.only !== 'crash-consistency')
    throw new Error(`--only takes crash-consistency, not ${values.only}`);
  const t = performance.now();
  const measured = await crashConsistency(seed);
  const figures = JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown> & {
    goals: Record<string, boolean>;
  };
  figures.goals[CRASH_CONSISTENCY_GOAL] = measured.held;
  figures.crashConsistency = {
    ...measured,
    seconds: Math.round((performance.now() - t) / 100) / 10,
    measuredAlone: `after the whole run: crashConsistency(${seed}) by itself (npm run reliability -- --only crash-consistency --seed ${seed}), load ${loadavg().map(round2).join(' ')}; the other sections are the whole run`,
  };
  writeFileSync(RESULTS, `${JSON.stringify(figures, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify({ [CRASH_CONSISTENCY_GOAL]: measured.held }, null, 2)}\n`);
  process.exit(measured.held ? 0 : 1);
}

const started = Date.now();
// The machine is shared: its load (1, 5, 15 minutes) is kept with the figures it shaped.
const loadAtStart = loadavg();
const timed = async <T>(name: string, work: () => Promise<T>): Promise<T & { seconds: number }> => {
  const t = performance.now();
  const result = await work();
  const seconds = Math.round((performance.now() - t) / 100) / 10;
  process.stdout.write(`${name}: ${seconds} s\n`);
  return { ...result, seconds };
};

const { attacks, concurrency } = await timed('approval attacks and concurrent decisions', () =>
  runApprovalAttacks(seed),
);
const oldVersions = await timed('old-version attacks and races', () => runOldVersionAttacks());
const secrets = await timed('planted secrets', () => plantedSecrets(REPO));
const quorumModification = await timed('quorum-modification attack', () => quorumModificationAttack(10));
const fuzz = await timed(`${plans} fuzzed plans`, () => fuzzPlans(REPO, plans, seed));
const corpus = await timed('destructive-command corpus', () => destructiveCommandCorpus(REPO));
const classes = await timed('the corpus by class', async () => corpusClasses());
const unattended = await timed('calls not proven read-only through plangate run --approve', () =>
  unattendedApprovalSample(REPO),
);
const selfApproval = await timed("self-approval through plangate run's doors", () =>
  selfApprovalThroughRun(REPO),
);
const policyBypass = await timed('policy bypass attempts', () => policyBypassAttempts(REPO));
const injection = await timed('run-time injection corpus', () => runtimeInjectionCorpus());
const forgery = await timed('forged journal histories', () => forgeryCorpus(seed));
const crash = await timed('crash points and random kill -9 under load', () => crashConsistency(seed));
const containment = await timed('containment corpus (escape attempts by plan processes)', () =>
  containmentCorpus(),
);

const goals = {
  'approval attacks: at least 1,000, none accepted, every refusal with a reason, the gate untouched':
    attacks.attacks >= 1_000 &&
    attacks.accepted === 0 &&
    attacks.refusedWithoutReason === 0 &&
    attacks.gateStillPending,
  'concurrent decisions from the API, the page and Slack: exactly one recorded, every other told who decided first, the Slack message shows it':
    concurrency.decided === 1 &&
    concurrency.decisionEvents === 1 &&
    concurrency.toldWhoDecided === concurrency.answers - 1 &&
    concurrency.slackShowsDecision,
  'old versions: no way of approving a superseded version accepted, none of it ran, each race of an approval and the closing won by exactly one':
    oldVersions.attempts >= 80 &&
    oldVersions.accepted === 0 &&
    oldVersions.supersededThatRan === 0 &&
    oldVersions.race.both + oldVersions.race.neither === 0,
  'fuzzed plans: at least 100,000, no crash, no hang':
    fuzz.plans >= 100_000 && fuzz.crashes === 0 && fuzz.hangs === 0,
  'planted secrets: found nowhere': secrets.found.length === 0,
  'destructive commands: every one found in step args, contracts, rollbacks (and their contracts) and postconditions; no ordinary command flagged':
    corpus.destructive.found === corpus.destructive.commands && corpus.harmless.flagged.length === 0,
  'the corpus by class: every unknown form classed unknown or destructive and every outbound flow marked exfiltration in every place a command stands; no read-only command marked':
    classes.unknown.missed.length === 0 &&
    classes.exfiltration.missed.length === 0 &&
    classes.readOnly.flagged.length === 0,
  "plangate run --approve on issue 30's sample of destructive and unknown calls, under a policy that permits everything: 0 auto-approved, every one left to a person (or refused by the validator before anything ran), nothing destroyed":
    unattended.autoApproved === 0 &&
    unattended.leftToAPerson + unattended.refusedAtValidation === unattended.calls &&
    unattended.victimsLost === 0,
  'quorum-modification attack: none accepted; a revision needs two approvals of itself':
    quorumModification.accepted === 0 && quorumModification.revisionApprovable,
  "self-approval through plangate run's page, terminal and API: none accepted, each try that reached the policy journaled, the submitter can still reject":
    selfApproval.accepted === 0 &&
    selfApproval.gateApproved === 0 &&
    selfApproval.refusalsJournaled === selfApproval.triesThatReachedThePolicy &&
    selfApproval.rejectedAfterwards,
  "policy bypass attempts (widened approval blocks, forged groups, changed args after approval, host and command spellings, Lambda by another route, ladders, names spelled otherwise, submitting as another principal, revisions and run-time values that make a gated call destructive, overrides of soft and hard rules, configuration that would silently not apply): at least 300, none accepted; two sre approvals, a deployer's submission, a harmless run-time value and an incident commander's override with a reason still work":
    policyBypass.attempts >= 300 &&
    policyBypass.accepted === 0 &&
    policyBypass.controls.twoSreComplete &&
    policyBypass.controls.deployerSubmits &&
    policyBypass.controls.harmlessValueRuns &&
    policyBypass.controls.icOverridesGate &&
    policyBypass.controls.icOverridesSubmission,
  'run-time injection: values from step outputs, context, secrets and people in every documented place, through the real CLI: no injected code ran, no URL reached another endpoint, no value arrived altered, at least 90% arrived whole':
    injection.injected === 0 &&
    injection.escapedUrls === 0 &&
    injection.altered === 0 &&
    injection.deliveredIntact >= 0.9 * injection.uses,
  "forged journal histories (rewritten and re-chained with the documented hash, truncated, inserted, swapped, re-anchored with a forger's key): at least 90, 0 undetected; the untouched history verifies":
    forgery.forgeries >= 90 && forgery.undetected === 0 && forgery.untouchedVerifies,
  "containment: an agent, a shell step, a contract, a postcondition and a rollback each try every way out (write outside, lift the sandbox, read the store and keys, read the harness's credentials, reach the run's endpoints, answer the human step, outlive the step, exfiltrate) through the real CLI: at least 200 attempts, 0 got out sandboxed; unsandboxed, the same attempts get out in every class but lifting a sandbox":
    containment.attempts >= 200 &&
    containment.succeeded === 0 &&
    containment.classesProvenByControl.length === ATTEMPT_CLASSES.length - 1 &&
    !containment.classesProvenByControl.includes('lift the sandbox'),
};
Object.assign(goals, { [CRASH_CONSISTENCY_GOAL]: crash.held });
const output = {
  description:
    "plangate's reliability figures; every part goes through the real interfaces (HTTP edge, CLI, local stack)",
  node: process.version,
  machine: {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    loadAverage: { atStart: loadAtStart.map(round2), atEnd: loadavg().map(round2) },
  },
  seed,
  minutes: Math.round((Date.now() - started) / 6000) / 10,
  goals,
  approvalAttacks: attacks,
  concurrentDecisions: {
    ...concurrency,
    channels:
      'API with a JWT, emailed recipient-bound links opened into page sessions (the form posted with its cookie and form token) and Slack clicks, at once (see byChannel)',
  },
  oldVersionAttacks: oldVersions,
  fuzzedPlans: fuzz,
  plantedSecrets: secrets,
  destructiveCommands: corpus,
  corpusClasses: classes,
  unattendedApproval: unattended,
  quorumModificationAttack: quorumModification,
  selfApprovalThroughRun: selfApproval,
  runtimeInjection: injection,
  policyBypassAttempts: {
    ...policyBypass,
    policies: "examples/policies/org (docs/policy.md), through plangate serve's HTTP edge",
  },
  containment: {
    ...containment,
    how: "one plangate run --approve --rehearse-rollback per configuration, its human step waiting while the processes try; each attempt judged from outside (marker files, the files beside the workspace, the corpus's own listeners on loopback and on this machine's address, the run's journal and the person's own answer, ps); sandboxed is the default, 'network shared' is PLANGATE_SANDBOX_NETWORK=host, unsandboxed (PLANGATE_SANDBOX=off) is the control",
  },
  crashConsistency: crash,
  forgedHistories: {
    ...forgery,
    how: "one plangate run, its events table forged in the store's DynamoDB; the named forgeries through `plangate audit verify --all`, seeded random re-chained edits and re-anchored forgeries through the same verification code (docs/audit.md)",
  },
};
mkdirSync(path.join(REPO, 'bench/results'), { recursive: true });
writeFileSync(RESULTS, `${JSON.stringify(output, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(goals, null, 2)}\n`);
if (Object.values(goals).some((met) => !met)) process.exitCode = 1;

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
