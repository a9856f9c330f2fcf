/** fast-check generators of valid plans (as plain documents, before defaults). */
import fc from 'fast-check';

export interface GeneratedStep {
  id: string;
  description: string;
  tool: string;
  args: Record<string, unknown>;
  dependsOn: string[];
  contract?: Record<string, unknown>;
  outputs?: string[];
  requiresApproval?: boolean;
  critical?: boolean;
}

export interface GeneratedPlan {
  id: string;
  version: number;
  objective: string;
  context: Record<string, unknown>;
  steps: GeneratedStep[];
  postconditions?: Array<Record<string, unknown>>;
}

const word = fc.constantFrom('build', 'test', 'lint', 'pack', 'sign', 'upload', 'verify', 'report', 'notify');
const label = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 ,.:'"#<>()[\]{}|`-]{0,40}$/);

/** A schema-valid, validator-valid plan of 3–7 steps whose dependencies only point backwards. */
export const validPlan: fc.Arbitrary<GeneratedPlan> = fc
  .record({
    size: fc.integer({ min: 3, max: 7 }),
    names: fc.array(word, { minLength: 7, maxLength: 7 }),
    descriptions: fc.array(label, { minLength: 7, maxLength: 7 }),
    depBits: fc.array(fc.array(fc.boolean(), { minLength: 7, maxLength: 7 }), { minLength: 7, maxLength: 7 }),
    kinds: fc.array(fc.constantFrom('echo', 'shell', 'wait'), { minLength: 7, maxLength: 7 }),
    context: fc.dictionary(
      fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/),
      // A valid plan has no `__proto__` key at any depth (the parser refuses one: forbidden-key).
      fc.jsonValue({ maxDepth: 3 }).filter((value) => !hasProtoKey(value)),
      { maxKeys: 4 },
    ),
    version: fc.integer({ min: 1, max: 50 }),
    objective: label,
  })
  .map(({ size, names, descriptions, depBits, kinds, context, version, objective }) => {
    const steps: GeneratedStep[] = [];
    for (let i = 0; i < size; i++) {
      const id = `${names[i]}-${i}`;
      const dependsOn = steps.filter((_, j) => depBits[i]![j]).map((s) => s.id);
      const kind = kinds[i]!;
      const args =
        kind === 'echo'
          ? { message: `done ${i}` }
          : kind === 'shell'
            ? { command: `echo ${i} > out-${i}.txt` }
            : { seconds: i };
      const contract =
        kind === 'shell'
          ? { kind: 'command', command: `test -f out-${i}.txt` }
          : { kind: 'assert', expression: `$exists(output) or ${i} = ${i}` };
      steps.push({ id, description: `${descriptions[i]!} ${i}`, tool: kind, args, dependsOn, contract });
    }
    return {
      id: 'generated',
      version,
      objective: objective || 'objective',
      // JSON normalises -0 and the like, so generated context survives both formats.
      context: JSON.parse(JSON.stringify(context)) as Record<string, unknown>,
      steps,
    };
  });

function hasProtoKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(hasProtoKey);
  return Object.keys(value).some(
    (key) => key === '__proto__' || hasProtoKey((value as Record<string, unknown>)[key]),
  );
}
