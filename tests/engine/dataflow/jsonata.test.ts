import { describe, expect, it } from 'vitest';
import {
  evaluateAssign,
  evaluateJsonataCondition,
  evaluateJsonataTemplate,
  type JsonataBindings,
} from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

const bindings = (over: Partial<JsonataBindings> = {}): JsonataBindings => ({
  input: { a: 1, list: [1, 2, 3] },
  context: { Execution: { Name: 'exec' } },
  variables: { x: 10 },
  ...over,
});

async function failure(promise: Promise<unknown>): Promise<StatesError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StatesError);
    return error as StatesError;
  }
  throw new Error('expected a failure');
}

describe('JSONata templates', () => {
  it('evaluates {% %} strings anywhere and leaves other values alone', async () => {
    const out = await evaluateJsonataTemplate(
      { a: '{% $states.input.a + $x %}', b: ['{% $states.context.Execution.Name %}', 'plain {% x'], c: 3 },
      bindings(),
      'Output',
    );
    expect(out).toEqual({ a: 11, b: ['exec', 'plain {% x'], c: 3 });
  });

  it('exposes $states.result and $states.errorOutput when given', async () => {
    expect(
      await evaluateJsonataTemplate('{% $states.result.r %}', bindings({ result: { r: 'R' } }), 'Output'),
    ).toBe('R');
    expect(
      await evaluateJsonataTemplate(
        '{% $states.errorOutput.Error %}',
        bindings({ errorOutput: { Error: 'E' } }),
        'Output',
      ),
    ).toBe('E');
  });

  it('provides the AWS functions', async () => {
    const b = bindings();
    expect(await evaluateJsonataTemplate('{% $partition([1,2,3], 2) %}', b, 'Output')).toEqual([[1, 2], [3]]);
    expect(await evaluateJsonataTemplate('{% $range(0, 10, 5) %}', b, 'Output')).toEqual([0, 5, 10]);
    expect(await evaluateJsonataTemplate("{% $hash('input data', 'MD5') %}", b, 'Output')).toBe(
      '812f45842bc6d66ee14572ce20db8e86',
    );
    expect(await evaluateJsonataTemplate('{% $parse(\'{"k": [1]}\') %}', b, 'Output')).toEqual({ k: [1] });
    expect(await evaluateJsonataTemplate('{% $uuid() %}', b, 'Output')).toMatch(/^[0-9a-f-]{36}$/);
    const r = (await evaluateJsonataTemplate('{% $random() %}', b, 'Output')) as number;
    expect(r >= 0 && r < 1).toBe(true);
  });

  it('reports undefined results with the field path, as AWS does', async () => {
    const e = await failure(
      evaluateJsonataTemplate({ FunctionName: '{% $doesNotExist %}' }, bindings(), 'Arguments'),
    );
    expect(e.error).toBe('States.QueryEvaluationError');
    expect(e.cause).toBe(
      "The JSONata expression '$doesNotExist' specified for the field 'Arguments/FunctionName' returned nothing (undefined).",
    );
  });

  it('reports evaluation errors and unsupported functions as States.QueryEvaluationError', async () => {
    const e = await failure(evaluateJsonataTemplate("{% $range('0', 4, 1) %}", bindings(), 'Output'));
    expect(e.cause).toMatch(
      /^The JSONata expression '\$range\('0', 4, 1\)' specified for the field 'Output' threw an error during evaluation\. T0410: /,
    );
    expect((await failure(evaluateJsonataTemplate('{% $eval("1") %}', bindings(), 'Output'))).error).toBe(
      'States.QueryEvaluationError',
    );
    expect((await failure(evaluateJsonataTemplate('{% 1 + %}', bindings(), 'Output'))).error).toBe(
      'States.QueryEvaluationError',
    );
    expect((await failure(evaluateJsonataTemplate('{% 1/0 %}', bindings(), 'Output'))).error).toBe(
      'States.QueryEvaluationError',
    );
  });
});

describe('JSONata Condition', () => {
  it('needs a boolean', async () => {
    expect(await evaluateJsonataCondition('{% $states.input.a = 1 %}', bindings())).toBe(true);
    expect(await evaluateJsonataCondition(true, bindings())).toBe(true);
    const e = await failure(evaluateJsonataCondition('{% $states.input.a %}', bindings()));
    expect(e.cause).toContain("Expected 'boolean', but was 'number' for value: 1");
  });
});

describe('Assign', () => {
  it('reads every value from before the assignment (JSONata)', async () => {
    const out = await evaluateAssign({ x: '{% $x + 1 %}', y: '{% $x %}' }, 'JSONata', bindings());
    expect(out).toEqual({ x: 11, y: 10 });
  });

  it('reads every value from before the assignment (JSONPath), $ being the result', async () => {
    const out = await evaluateAssign(
      { 'x.$': '$.r', 'y.$': '$x', 'z.$': '$$.Execution.Name', lit: { 'k.$': '$.r' } },
      'JSONPath',
      bindings({ result: { r: 'R' } }),
    );
    expect(out).toEqual({ x: 'R', y: 10, z: 'exec', lit: { k: 'R' } });
  });
});

describe('jsonataResultTypeError', () => {
  it("words a wrong result type as AWS does for Map's Items", async () => {
    const { jsonataResultTypeError } = await import('../../../lib/engine/dataflow/index.ts');
    expect(jsonataResultTypeError('$ItemsVar', 'Items', 'array', { foo: 'bar' }).cause).toBe(
      `The JSONata expression '$ItemsVar' specified for the field 'Items' returned an unexpected result type. Expected 'array', but was 'object' for value: {"foo":"bar"}`,
    );
  });
});
