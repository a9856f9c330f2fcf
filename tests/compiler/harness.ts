/**
 * In-test harness Lambdas that implement lib/runtime/payloads/index.ts faithfully (every request is
 * parsed with its schema, every answer has the contract's shape), scripted per test: what the
 * approver decides, which attempts of which steps fail and how. Runs compiled definitions on
 * the embedded engine with the `${…}` substitutions filled in.
 */

import { type CompileResult, PLACEHOLDERS } from '../../lib/compiler/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { createEngine } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/resource-invoker.ts';
import { SfnServiceError } from '../../lib/engine/types.ts';
import {
  type ApprovalDecision,
  type CheckRequest,
  CheckRequestSchema,
  type CheckResult,
  ClassifyRequestSchema,
  type ClassifyResult,
  type EscalationDecision,
  FinalizeRequestSchema,
  type FinalizeResult,
  failureClassOfError,
  type GateRequest,
  GateRequestSchema,
  HarnessFailure,
  type HumanDecision,
  INCONSISTENT_RUN,
  JoinRequestSchema,
  type LambdaErrorName,
  type RunnerRequest,
  RunnerRequestSchema,
  type RunnerResult,
  type StepEntry,
} from '../../lib/runtime/payloads/index.ts';

export interface Script {
  /**
   * Decision for a plan or step gate, asked on each rung of its timeout ladder (`request.ladder`);
   * undefined: nobody answers this wait, which times out (the next rung asks again). @default APPROVE
   */
  gate?: (request: GateRequest) => ApprovalDecision | undefined;
  /** Decision for an escalation gate asked of a person. @default ABORT */
  escalate?: (request: GateRequest) => EscalationDecision;
  /** A person's answer to a human step. @default DONE with `<output>: "<step>#<attempt>"` per declared output */
  human?: (request: GateRequest) => HumanDecision;
  /** Error name the runner throws for (step, attempt, try within the Retry block). */
  runnerError?: (stepId: string, attempt: number, call: number) => LambdaErrorName | undefined;
  /** Steps whose contract fails on the given attempt. */
  contractFails?: (stepId: string, attempt: number) => boolean;
  /** Postcondition ids that do not hold. */
  failingPostconditions?: readonly string[];
  /** Finalize finds the journal inconsistent, for this reason (the checker's `Plangate.InconsistentRun`). */
  inconsistent?: string;
  /**
   * The error code StartExecution refuses a step machine's start with, as AWS does when throttled
   * (`ThrottlingException`) or at the open-executions quota (`ExecutionLimitExceeded`), for the
   * step and its n-th start; undefined starts it.
   */
  refuseStart?: (stepId: string, start: number) => string | undefined;
}

export interface RunRecord {
  status: string | undefined;
  error: string | undefined;
  output: unknown;
  /** Steps in the order their runner started work (skipped/blocked are not started). */
  started: string[];
  /** Final status per step as the checker recorded it. */
  statuses: Map<string, string>;
  gates: GateRequest[];
  /** Every contract-checker request, in order. */
  checks: CheckRequest[];
  finalize: FinalizeResult | undefined;
  runnerCalls: Map<string, number>;
  /** Per step on a step machine: how many times the plan asked to start its child execution. */
  childStarts: Map<string, number>;
  /** Per step: the argOverrides the runner received. */
  overrides: Map<string, Record<string, unknown>>;
  /** Per skipped step: the step gate's rejection the runner received (null: skipped at the plan gate). */
  rejections: Map<string, RunnerRequest['rejection']>;
}

const FUNCTIONS = {
  [PLACEHOLDERS.gate]: 'gate',
  [PLACEHOLDERS.stepRunner]: 'runner',
  [PLACEHOLDERS.contractChecker]: 'checker',
  [PLACEHOLDERS.classifier]: 'classifier',
  [PLACEHOLDERS.join]: 'join',
} as const;

const fnArn = (name: string) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`;

export function substitute(json: string, values: Record<string, string>): string {
  return json.replace(/\$\{([A-Za-z0-9_]+)\}/g, (whole, name: string) => values[name] ?? whole);
}

/**
 * Runs `compiled` to its end. `timeScale` 0 (the default) never waits, and never times a wait
 * out either: a test of the timeout ladder passes a small positive one.
 */
export async function runCompiled(
  compiled: CompileResult,
  script: Script = {},
  { timeScale = 0 }: { timeScale?: number } = {},
): Promise<RunRecord> {
  const record: RunRecord = {
    status: undefined,
    error: undefined,
    output: undefined,
    started: [],
    statuses: new Map(),
    gates: [],
    checks: [],
    finalize: undefined,
    runnerCalls: new Map(),
    childStarts: new Map(),
    overrides: new Map(),
    rejections: new Map(),
  };
  let engine: Engine | undefined;
  const later = (fn: () => Promise<unknown>) => {
    setTimeout(() => {
      fn().catch((error: unknown) => {
        // On a loaded machine an answer can meet a wait that just timed out: the ladder's next
        // rung asks again, as a person's late click would be handed on. Anything else is a bug.
        if ((error as { code?: string }).code === 'TaskTimedOut') return;
        throw error;
      });
    }, 1);
  };
  const answer = (taskToken: string, output: unknown) =>
    later(() => (engine as Engine).sendTaskSuccess({ taskToken, output: JSON.stringify(output) }));

  const joins = new Map<string, { token?: string; predecessors: string[] }>();
  const signals = new Map<string, StepEntry>();
  const carried = new Map<string, Record<string, StepEntry>>();
  // As lib/runtime/steps/join.ts releases: the predecessors' carried ancestors, then their own entries.
  const releaseIfReady = (stepId: string) => {
    const join = joins.get(stepId);
    if (!join?.token || !join.predecessors.every((p) => signals.has(p))) return;
    const entries: Record<string, StepEntry> = Object.assign(
      {},
      ...join.predecessors.map((p) => carried.get(p)),
    );
    for (const p of join.predecessors) entries[p] = signals.get(p) as StepEntry;
    const token = join.token;
    join.token = undefined;
    answer(token, { entries });
  };

  const handlers = {
    gate: async (event: unknown) => {
      const request = GateRequestSchema.parse(event);
      record.gates.push(request);
      if (request.kind === 'escalation') {
        const decision: EscalationDecision =
          request.policy === 'skip'
            ? { decision: 'SKIP' }
            : request.policy === 'abort'
              ? { decision: 'ABORT' }
              : (script.escalate?.(request) ?? { decision: 'ABORT' });
        answer(request.taskToken, decision);
      } else if (request.kind === 'human') {
        const human = request.human as NonNullable<GateRequest['human']>;
        const stepId = request.stepId as string;
        const attempt = request.attempt ?? 1;
        const base = { stepId, attempt, durationMs: 0 };
        const blockedBy = human.dependsOn.filter((d) => human.inputs[d]?.status !== 'completed');
        if (human.skip) answer(request.taskToken, { ...base, status: 'skipped' });
        else if (blockedBy.length > 0) answer(request.taskToken, { ...base, status: 'blocked', blockedBy });
        else {
          record.started.push(stepId);
          const decision = script.human?.(request) ?? {
            decision: 'DONE',
            outputs: Object.fromEntries(human.outputs.map((o) => [o, `${stepId}#${attempt}`])),
          };
          if (decision.decision === 'DONE')
            answer(request.taskToken, { ...base, status: 'succeeded', output: decision.outputs });
          else
            later(() =>
              (engine as Engine).sendTaskFailure({
                taskToken: request.taskToken,
                error: 'Plangate.Unrecoverable',
                cause: JSON.stringify({ message: decision.reason }),
              }),
            );
        }
      } else {
        const decision = script.gate ? script.gate(request) : { decision: 'APPROVE' as const };
        if (decision) answer(request.taskToken, decision);
      }
      return { requested: true };
    },
    runner: async (event: unknown): Promise<RunnerResult> => {
      const request = RunnerRequestSchema.parse(event);
      const base = { stepId: request.stepId, attempt: request.attempt, durationMs: 0 };
      if (request.skip) {
        record.rejections.set(request.stepId, request.rejection);
        return { ...base, status: 'skipped' };
      }
      const blockedBy = request.dependsOn.filter((d) => request.inputs[d]?.status !== 'completed');
      if (blockedBy.length > 0) return { ...base, status: 'blocked', blockedBy };
      const call = (record.runnerCalls.get(request.stepId) ?? 0) + 1;
      record.runnerCalls.set(request.stepId, call);
      record.overrides.set(request.stepId, request.argOverrides);
      const error = script.runnerError?.(request.stepId, request.attempt, call);
      if (error) throw new HarnessFailure(error, { message: `${request.stepId} failed (${error})` });
      record.started.push(request.stepId);
      return { ...base, status: 'succeeded', output: { value: `${request.stepId}#${request.attempt}` } };
    },
    checker: async (event: unknown): Promise<CheckResult | FinalizeResult> => {
      if ((event as { kind?: string }).kind === 'finalize') {
        const request = FinalizeRequestSchema.parse(event);
        const failed = (script.failingPostconditions ?? []).filter((id) =>
          request.postconditions.some((p) => p.id === id),
        );
        let completed = 0;
        let skipped = 0;
        for (const id of request.stepIds) {
          const status = record.statuses.get(id);
          if (status === 'completed') completed += 1;
          else if (status === 'skipped' || status === 'blocked') skipped += 1;
        }
        const missing = request.stepIds.length - completed - skipped;
        const inconsistent = script.inconsistent && !request.error;
        const result: FinalizeResult = {
          succeeded: !request.error && !inconsistent && missing === 0 && failed.length === 0,
          summary: { completed, failed: missing, skipped },
          failedPostconditions: failed,
          ...(inconsistent ? { error: { Error: INCONSISTENT_RUN, Cause: script.inconsistent } } : {}),
        };
        record.finalize = result;
        return result;
      }
      const request = CheckRequestSchema.parse(event);
      record.checks.push(request);
      if (request.run.status === 'dispatched') throw new Error('a dispatched run reached the checker');
      if (request.run.status !== 'succeeded') {
        record.statuses.set(request.stepId, request.run.status);
        return { status: request.run.status };
      }
      if (script.contractFails?.(request.stepId, request.attempt)) {
        throw new HarnessFailure('Plangate.ContractFailed', {
          message: 'contract did not pass',
          failureClass: 'logic',
        });
      }
      record.statuses.set(request.stepId, 'completed');
      return {
        status: 'completed',
        ...(request.run.output ? { output: request.run.output } : {}),
        evidence: { kind: 'none', passed: true, summary: 'ok', checkedAt: new Date(0).toISOString() },
      };
    },
    classifier: async (event: unknown): Promise<ClassifyResult> => {
      const request = ClassifyRequestSchema.parse(event);
      const named = failureClassOfError(request.error.Error);
      const failureClass = named ?? 'unknown';
      const recipe = request.recovery[failureClass];
      const loops = request.error.Error === 'Plangate.ContractFailed' || named === undefined;
      const retries = request.onFail?.retries ?? recipe?.maxAttempts ?? 0;
      return {
        failureClass,
        error: request.error.Error,
        message: request.error.Cause ?? '',
        phase: request.phase,
        action: loops && request.attempt <= retries ? 'RETRY' : 'ESCALATE',
        policy: request.onFail?.escalation ?? recipe?.escalation ?? 'ask',
        recipe: failureClass,
      };
    },
    join: async (event: unknown) => {
      const request = JoinRequestSchema.parse(event);
      if (request.action === 'wait') {
        joins.set(request.stepId, { token: request.taskToken, predecessors: request.predecessors });
        releaseIfReady(request.stepId);
        return { waiting: true };
      }
      signals.set(request.stepId, request.entry);
      carried.set(request.stepId, request.carried);
      for (const successor of request.successors) releaseIfReady(successor);
      return { released: [] };
    },
  };

  engine = createEngine({
    invokeResource: createResourceInvoker({
      lambdaHandlers: Object.fromEntries(Object.entries(handlers).map(([n, h]) => [n, h])),
    }),
    timeScale,
    storeDir: undefined,
  });
  // The engine starts a child through its own StartExecution: refuse some there, as AWS may.
  const startExecution = engine.startExecution.bind(engine);
  engine.startExecution = async (input) => {
    const stepId = (JSON.parse(input.input ?? '{}') as { step?: { stepId?: string } }).step?.stepId;
    if (stepId !== undefined) {
      const start = (record.childStarts.get(stepId) ?? 0) + 1;
      record.childStarts.set(stepId, start);
      const refused = script.refuseStart?.(stepId, start);
      if (refused) throw new SfnServiceError(refused, 'Rate exceeded');
    }
    return startExecution(input);
  };
  const values: Record<string, string> = {};
  for (const [placeholder, name] of Object.entries(FUNCTIONS)) values[placeholder] = fnArn(name);
  try {
    // Children first, so the parent's substitutions can name their ARNs.
    for (const definition of [...compiled.definitions].reverse()) {
      const created = await engine.createStateMachine({
        name: definition.name,
        definition: substitute(definition.json, values),
        roleArn: 'arn:aws:iam::123456789012:role/plangate',
      });
      if (definition.arnSubstitution) values[definition.arnSubstitution] = created.stateMachineArn as string;
    }
    const main = compiled.definitions[0];
    const arn = `arn:aws:states:us-east-1:123456789012:stateMachine:${main?.name}`;
    const { executionArn } = await engine.startExecution({ stateMachineArn: arn, input: '{}' });
    const described = await engine.awaitExecution(executionArn as string);
    record.status = described.status;
    record.error = described.error;
    record.output = described.output ? JSON.parse(described.output) : undefined;
    return record;
  } finally {
    await engine.close();
  }
}
