/**
 * Plays recorded-AWS conformance cases (see ../shared/conformance/FORMAT.md) through an engine:
 * each case's definition becomes a state machine, its mockConfig the test case `Default`, and the
 * engine's outcome (status, output, error, cause, states entered) is compared by the case set's
 * own compare rules.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import type { StepFunctionsEngine } from '../../lib/engine/types.ts';

/** One case file (the fields the runner reads). */
export interface ConformanceCase {
  readonly id: string;
  readonly category: string;
  readonly definition: unknown;
  readonly input: unknown;
  readonly mockConfig: { StateMachines?: Record<string, unknown>; MockedResponses?: Record<string, unknown> };
  readonly expected: { status: string; historyTypes?: string[] };
  readonly concurrent?: boolean;
  readonly parallelEventsResorted?: boolean;
  readonly hasWait?: boolean;
  readonly hasRetry?: boolean;
}

/** What the engine did, in the shape compare.mjs reads. */
export interface CaseResult {
  status: string;
  output?: unknown;
  error?: string;
  cause?: string;
  statesEntered: string[];
  /** Every history event type, in order (informative: compared separately from pass/fail). */
  historyTypes: string[];
}

export type CompareFn = (c: ConformanceCase, got: CaseResult) => string[];

export interface ConformanceReport {
  readonly total: number;
  readonly passed: number;
  readonly categories: Record<string, { total: number; passed: number }>;
  readonly failures: Array<{ id: string; category: string; mismatch: string }>;
  /** Cases whose history event types equal AWS's (as a multiset where events interleave). */
  readonly historyMatches: number;
  /** Cases whose history event types differ, with the first difference. */
  readonly historyDifferences: Array<{ id: string; difference: string }>;
  readonly elapsedMs: number;
}

/** The SFN API surface the runner drives (the Engine itself, or an SFN client over HTTP). */
export interface CaseDriver {
  readonly api: Pick<
    StepFunctionsEngine,
    'createStateMachine' | 'startExecution' | 'describeExecution' | 'getExecutionHistory'
  >;
  /** Waits until the execution has ended. */
  awaitEnd(executionArn: string): Promise<void>;
  close(): Promise<void>;
}

const ROLE = 'arn:aws:iam::111111111111:role/conformance';

/** An in-memory engine for one case: the case's mock config, time scaled to 0, unmocked tasks fail loudly. */
export function caseEngine(c: ConformanceCase): Engine {
  return createEngine({
    storeDir: undefined,
    accountId: '111111111111',
    mockConfig: c.mockConfig,
    timeScale: 0,
    invokeResource: async (invocation) => {
      throw new Error(`resource ${invocation.resource} is not mocked for state '${invocation.stateName}'`);
    },
  });
}

/** Drives {@link caseEngine} in process, through its Step Functions API methods. */
export function inProcessDriver(c: ConformanceCase): CaseDriver {
  const engine = caseEngine(c);
  return {
    api: engine,
    awaitEnd: async (arn) => {
      await engine.awaitExecution(arn);
    },
    close: () => engine.close(),
  };
}

/** Runs one case and returns what happened. */
export async function runCase(
  c: ConformanceCase,
  driver: CaseDriver,
  machineName = 'Case',
): Promise<CaseResult> {
  const created = await driver.api.createStateMachine({
    name: machineName,
    definition: JSON.stringify(c.definition),
    roleArn: ROLE,
  });
  const started = await driver.api.startExecution({
    stateMachineArn: `${created.stateMachineArn}#Default`,
    input: JSON.stringify(c.input),
  });
  const arn = String(started.executionArn);
  await driver.awaitEnd(arn);
  const described = await driver.api.describeExecution({ executionArn: arn });
  const statesEntered: string[] = [];
  const historyTypes: string[] = [];
  let nextToken: string | undefined;
  do {
    const page: sfn.GetExecutionHistoryOutput = await driver.api.getExecutionHistory({
      executionArn: arn,
      maxResults: 1000,
      ...(nextToken ? { nextToken } : {}),
    });
    for (const e of page.events ?? []) {
      historyTypes.push(String(e.type));
      if (e.type?.endsWith('StateEntered')) statesEntered.push(String(e.stateEnteredEventDetails?.name));
    }
    nextToken = page.nextToken;
  } while (nextToken);
  const result: CaseResult = { status: String(described.status), statesEntered, historyTypes };
  if (described.output !== undefined) result.output = JSON.parse(described.output);
  if (described.error !== undefined) result.error = described.error;
  if (described.cause !== undefined) result.cause = described.cause;
  return result;
}

/** Plays every case; `driverFor` defaults to an in-process engine per case. */
export async function playCases(
  cases: readonly ConformanceCase[],
  compare: CompareFn,
  options: {
    driverFor?: (c: ConformanceCase, index: number) => Promise<CaseDriver> | CaseDriver;
    machineName?: (index: number) => string;
  } = {},
): Promise<ConformanceReport> {
  const started = Date.now();
  const categories: Record<string, { total: number; passed: number }> = {};
  const failures: ConformanceReport['failures'] = [];
  let passed = 0;
  let historyMatches = 0;
  const historyDifferences: ConformanceReport['historyDifferences'] = [];
  for (const [index, c] of cases.entries()) {
    const tally = categories[c.category] ?? { total: 0, passed: 0 };
    categories[c.category] = tally;
    tally.total++;
    const driver = await (options.driverFor ?? inProcessDriver)(c, index);
    let mismatch: string | undefined;
    try {
      const result = await withTimeout(runCase(c, driver, options.machineName?.(index) ?? 'Case'), 10_000);
      mismatch = compare(c, result)[0];
      const difference = historyDifference(c, result.historyTypes);
      if (difference === undefined) historyMatches++;
      else historyDifferences.push({ id: c.id, difference });
    } catch (error) {
      mismatch = `error: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
    } finally {
      await driver.close();
    }
    if (mismatch === undefined) {
      passed++;
      tally.passed++;
    } else failures.push({ id: c.id, category: c.category, mismatch });
  }
  return {
    total: cases.length,
    passed,
    categories,
    failures,
    historyMatches,
    historyDifferences,
    elapsedMs: Date.now() - started,
  };
}

/** The first difference between AWS's event types and ours (sorted first where events interleave). */
function historyDifference(c: ConformanceCase, got: string[]): string | undefined {
  const expected = c.expected.historyTypes;
  if (!expected) return undefined;
  const unordered = c.concurrent || c.parallelEventsResorted;
  const a = unordered ? [...expected].sort() : expected;
  const b = unordered ? [...got].sort() : got;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `event ${i + 1}: expected ${a[i]}, got ${b[i]}`;
  }
  return undefined;
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`case did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
