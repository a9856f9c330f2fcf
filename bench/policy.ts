/**
 * What the platform's policy costs (lib/policy, Cedar's WebAssembly build): loading Cedar and a
 * policy directory once per process, computing a plan's facts (once, at submission), and one
 * decision of each kind the gate and the step runner make, with the shipped set and with the
 * worked organisation set (examples/policies/org). Writes bench/results/policy.json.
 *
 *   npm run bench:policy [-- --decisions N]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PlanSchema } from '../lib/plan/schema.ts';
import { cedar } from '../lib/policy/cedar.ts';
import { planFacts } from '../lib/policy/entities.ts';
import { PolicySet } from '../lib/policy/policy-set.ts';
import { scenarioRequest } from '../lib/policy/scenarios.ts';
import type { PolicyAction } from '../lib/runtime/payloads/index.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { decisions: { type: 'string' } } });
const decisions = Number(values.decisions ?? 5_000);
const loadAtStart = loadavg();

const ms = (from: number) => Math.round((performance.now() - from) * 100) / 100;

// Once per process: the WebAssembly, then each directory (read, validated, prepared).
let t = performance.now();
await cedar();
const wasmMs = ms(t);
t = performance.now();
const shipped = await PolicySet.load();
const shippedMs = ms(t);
t = performance.now();
const org = await PolicySet.load(path.join(REPO, 'examples/policies/org'));
const orgMs = ms(t);

/** A plan of `n` steps: shell and http calls, every fifth destructive with its own gate. */
function plan(n: number) {
  return PlanSchema.parse({
    id: `policy-bench-${n}`,
    objective: `A plan of ${n} steps whose facts policy judges`,
    sizePolicy: { minSteps: 1, maxSteps: n },
    steps: Array.from({ length: n }, (_, i) =>
      i % 5 === 4
        ? {
            id: `s${i}`,
            description: `Remove scratch ${i}`,
            tool: 'shell',
            args: { command: `rm -rf ./scratch-${i}` },
            requiresApproval: true,
            contract: { kind: 'command', command: `test ! -e ./scratch-${i}` },
          }
        : {
            id: `s${i}`,
            description: `Fetch status ${i}`,
            tool: 'http',
            args: { method: 'GET', url: `https://status${i % 7}.example.org/v1/${i}` },
            contract: { kind: 'assert', expression: 'true' },
          },
    ),
  });
}

const factsCost = [10, 100, 1_000].map((steps) => {
  const p = plan(steps);
  const start = performance.now();
  planFacts(p);
  return { steps, ms: ms(start) };
});

const subject = plan(20);
const facts = planFacts(subject);
const principal = { name: 'sam', groups: ['sre'] };
const kinds: { action: PolicyAction; step?: string; approvals?: { name: string }[] }[] = [
  { action: 'SubmitPlan' },
  { action: 'ApprovePlanGate' },
  { action: 'CompleteGate', approvals: [{ name: 'sam' }, { name: 'sue' }] },
  { action: 'ApproveStepGate', step: 's4' },
  { action: 'RunStep', step: 's3' },
  { action: 'ReadExecution' },
];

/** Microseconds per decision (p50, p99, mean) over `decisions` decisions, the request built each time as the harness does. */
function perDecision(set: PolicySet, kind: (typeof kinds)[number]) {
  const samples: number[] = [];
  for (let i = 0; i < decisions; i++) {
    const start = performance.now();
    set.authorize(
      scenarioRequest(
        subject,
        {
          principal,
          action: kind.action,
          submitter: 'carol',
          ...(kind.step ? { step: kind.step } : {}),
          ...(kind.approvals ? { approvals: kind.approvals } : {}),
        },
        set,
        facts,
      ),
    );
    samples.push((performance.now() - start) * 1000);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] as number);
  return {
    action: kind.action,
    p50Us: at(0.5),
    p99Us: at(0.99),
    meanUs: Math.round(samples.reduce((a, b) => a + b, 0) / samples.length),
  };
}

const sets = { shipped, org };
const perSet = Object.fromEntries(
  Object.entries(sets).map(([name, set]) => [
    name,
    { policies: set.policies.length, decisions: kinds.map((kind) => perDecision(set, kind)) },
  ]),
);

const output = {
  description:
    "The platform's policy (Cedar): loaded once per process, then one decision per gate answer, gate completion, submission, read and step run",
  node: process.version,
  machine: {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    loadAverage: {
      atStart: loadAtStart.map((l) => Math.round(l * 100) / 100),
      atEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    },
  },
  oncePerProcess: {
    cedarWasmMs: wasmMs,
    shippedPolicySetMs: shippedMs,
    orgPolicySetMs: orgMs,
  },
  planFactsAtSubmission: factsCost,
  decisionsPerKind: decisions,
  perDecision: perSet,
  note: "A gate answer adds one decision (two when it completes the plan quorum) and one read of the execution's first event (PLAN_CREATED, a Query with Limit 1); the step runner adds one decision and the same read. Both are small beside the DynamoDB writes and the Step Functions call each already makes.",
};
mkdirSync(path.join(REPO, 'bench/results'), { recursive: true });
writeFileSync(path.join(REPO, 'bench/results/policy.json'), `${JSON.stringify(output, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
