import { describe, expect, it } from 'vitest';
import { validateDefinition } from '../../lib/engine/validate/index.ts';
import { currentStatemachines, expectedStatemachines } from '../../scripts/build-statemachines.ts';
import { aslValidator } from './asl-validator.ts';

describe('statemachines/', () => {
  it('holds exactly the compiled ASL of every example plan (run `npm run statemachines` when this fails)', async () => {
    const expected = await expectedStatemachines();
    const current = await currentStatemachines();
    expect([...current.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [file, text] of expected)
      expect(current.get(file), `statemachines/${file} is stale`).toBe(text);
  });

  it('every definition passes asl-validator and the engine validator', async () => {
    const current = await currentStatemachines();
    expect(current.size).toBeGreaterThan(0);
    for (const [file, text] of current) {
      const result = aslValidator(JSON.parse(text));
      expect(result.isValid, `${file}: ${result.isValid ? '' : result.errorsText('\n')}`).toBe(true);
      // An agent step's Resource is its activity's placeholder, which the engine (like AWS)
      // validates only once substituted.
      const substituted = text.replace(
        /\$\{AgentActivityArn_(\w+)\}/g,
        'arn:aws:states:us-east-1:123456789012:activity:plangate-$1',
      );
      expect(validateDefinition(substituted), file).toEqual([]);
    }
  });
});
