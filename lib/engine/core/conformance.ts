/**
 * Plays recorded-AWS conformance cases (see ../shared/conformance/FORMAT.md) through an engine:
 * each case's definition becomes a state machine, its mockConfig the test case `Default`, and the
 * engine's outcome (status, output, error, cause, states entered) is compared by the case set's
 * own compare rules.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import { createEngine, type Engine } from '../engine.ts';
import type { StepFunctionsEngine } from '../types.ts';

/** One case file (the fields the runner reads). */
export interface ConformanceCase {
  readonly id: string;
  readonly category: string;
  readonly definition: unknown;
  readonly input: unknown;
  readonly mockConfig: { StateMachines?: Record<string, unknown>; MockedResponses?: Record<string, unknown> };
  readonly expected: { status: string };
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
}

export type CompareFn = (c: ConformanceCase, got: CaseResult) => string[];

export interface ConformanceReport {
  readonly total: number;
  readonly passed: number;
  readonly categories: Record<string, { total: number; passed: number }>;
  readonly failures: Array<{ id: string; category: string; mismatch: string }>;
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

/** An in-memory engine for one case, with the case's mock config and time scaled to 0. */
export function inProcessDriver(c: ConformanceCase): CaseDriver {
  const engine: Engine = createEngine({
    storeDir: undefined,
    accountId: '111111111111',
    mockConfig: c.mockConfig,
    timeScale: 0,
    invokeResource: async (invocation) => {
      throw new Error(`resource ${invocation.resource} is not mocked for state '${invocation.stateName}'`);
    },
  });
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
  let nextToken: string | undefined;
  do {
    const page: sfn.GetExecutionHistoryOutput = await driver.api.getExecutionHistory({
      executionArn: arn,
      maxResults: 1000,
      ...(nextToken ? { nextToken } : {}),
    });
    for (const e of page.events ?? []) {
      if (e.type?.endsWith('StateEntered')) statesEntered.push(String(e.stateEnteredEventDetails?.name));
    }
    nextToken = page.nextToken;
  } while (nextToken);
  const result: CaseResult = { status: String(described.status), statesEntered };
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
  for (const [index, c] of cases.entries()) {
    const tally = categories[c.category] ?? { total: 0, passed: 0 };
    categories[c.category] = tally;
    tally.total++;
    const driver = await (options.driverFor ?? inProcessDriver)(c, index);
    let mismatch: string | undefined;
    try {
      const result = await withTimeout(runCase(c, driver, options.machineName?.(index) ?? 'Case'), 10_000);
      mismatch = compare(c, result)[0];
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
  return { total: cases.length, passed, categories, failures, elapsedMs: Date.now() - started };
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
