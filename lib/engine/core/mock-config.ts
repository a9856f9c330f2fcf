/**
 * Step Functions Local's MockConfigFile: StateMachines → TestCases → state → mocked response
 * name; MockedResponses → invocation key ("0", "1-3") → `{ Return }` or `{ Throw: { Error, Cause } }`.
 * An execution uses a test case when it is started with `<stateMachineArn>#<TestCaseName>`.
 */
import { z } from 'zod';
import { SfnServiceError, StatesError } from '../types.ts';

const mockedResponseSchema = z.union([
  z.object({ Return: z.unknown() }).strict(),
  z
    .object({
      Throw: z.object({ Error: z.string().optional(), Cause: z.string().optional() }).strict(),
    })
    .strict(),
]);

const invocationKey = /^(\d+)(?:-(\d+))?$/;

export const mockConfigSchema = z
  .object({
    StateMachines: z
      .record(
        z.string(),
        z.object({ TestCases: z.record(z.string(), z.record(z.string(), z.string())) }).passthrough(),
      )
      .default({}),
    MockedResponses: z
      .record(
        z.string(),
        z.record(
          z.string().regex(invocationKey, 'invocation key must be "N" or "N-M"'),
          mockedResponseSchema,
        ),
      )
      .default({}),
  })
  .passthrough();

export type MockConfig = z.infer<typeof mockConfigSchema>;
export type MockedResponse = z.infer<typeof mockedResponseSchema>;

/** Parses a MockConfigFile; throws a located error for a bad one. */
export function parseMockConfig(raw: unknown): MockConfig {
  const parsed = mockConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`Invalid mock config at /${issue?.path.join('/') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  for (const [machine, { TestCases }] of Object.entries(parsed.data.StateMachines)) {
    for (const [testCase, states] of Object.entries(TestCases)) {
      for (const [state, response] of Object.entries(states)) {
        if (!Object.hasOwn(parsed.data.MockedResponses, response)) {
          throw new Error(
            `Invalid mock config at /StateMachines/${machine}/TestCases/${testCase}/${state}: no MockedResponses entry "${response}"`,
          );
        }
      }
    }
  }
  return parsed.data;
}

/** The mocked responses of one test case, counting invocations per state across the execution. */
export class MockedTestCase {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly config: MockConfig,
    private readonly states: Record<string, string>,
  ) {}

  /** Finds the test case for `machineName#testCase`; throws if the test case does not exist. */
  static select(config: MockConfig | undefined, machineName: string, testCase: string): MockedTestCase {
    const states = config?.StateMachines[machineName]?.TestCases[testCase];
    if (!config || !states) {
      throw new SfnServiceError(
        'InvalidArn',
        `Test case '${testCase}' is not defined for state machine '${machineName}' in the mock config`,
      );
    }
    return new MockedTestCase(config, states);
  }

  /** Whether the state's invocations are mocked. */
  mocks(stateName: string): boolean {
    return Object.hasOwn(this.states, stateName);
  }

  /** Counts an invocation of the state; returns the task result or throws its mocked error. */
  invoke(stateName: string): unknown {
    const n = this.counts.get(stateName) ?? 0;
    this.counts.set(stateName, n + 1);
    const response = this.responseFor(stateName, n);
    if (!response) {
      throw new StatesError(
        'States.Runtime',
        `No mocked response for invocation ${n} of state '${stateName}' in the mock config`,
      );
    }
    if ('Return' in response) return structuredClone(response.Return);
    throw new MockedThrow(response.Throw.Error, response.Throw.Cause);
  }

  private responseFor(stateName: string, n: number): MockedResponse | undefined {
    const name = this.states[stateName];
    const responses = name === undefined ? undefined : this.config.MockedResponses[name];
    if (!responses) return undefined;
    for (const [key, response] of Object.entries(responses)) {
      const m = invocationKey.exec(key);
      const from = Number(m?.[1]);
      const to = m?.[2] === undefined ? from : Number(m[2]);
      if (n >= from && n <= to) return response;
    }
    return undefined;
  }
}

/** A mocked task failure; Error/Cause may be absent, which AWS shows as null in the error output. */
export class MockedThrow extends StatesError {
  constructor(
    readonly mockedError: string | undefined,
    readonly mockedCause: string | undefined,
  ) {
    super(mockedError ?? '', mockedCause);
  }
}
