/**
 * Resolves `${steps.<id>.<output>}`, `${context.<key>}` and `${secrets.<name>}` inside step args
 * at call time. A string that is exactly one reference takes the referenced value as is (numbers
 * and objects stay typed); references inside longer strings are interpolated as text. Shell text is
 * never filled here: shell-command.ts hands its values to bash as data.
 */
import { REFERENCE_PATTERN } from '../../plan/schema.ts';
import { InvalidInputError } from '../shared/errors.ts';
import type { SecretSource } from './secrets.ts';

/** What references can point at. */
export interface ReferenceScope {
  /** Outputs captured by earlier steps, by step id then output name. */
  readonly steps: Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>>;
  readonly context: Readonly<Record<string, unknown>>;
  /** Resolves `${secrets.*}`; without it a secret reference is an error. */
  readonly secrets?: SecretSource;
}

const WHOLE_REFERENCE = new RegExp(`^${REFERENCE_PATTERN.source}$`);

/** Resolves every reference in `value` (deeply); `location` names where `value` sits, for errors. */
export async function resolveReferences(
  value: unknown,
  scope: ReferenceScope,
  location = 'args',
): Promise<unknown> {
  if (typeof value === 'string') return resolveString(value, scope, location);
  if (Array.isArray(value)) {
    return Promise.all(value.map((item, i) => resolveReferences(item, scope, `${location}[${i}]`)));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value))
      out[key] = await resolveReferences(item, scope, `${location}.${key}`);
    return out;
  }
  return value;
}

/** The value of one reference as written (`${steps.build.dir}`); throws, located, when it does not resolve. */
export async function resolveReference(
  raw: string,
  scope: ReferenceScope,
  location: string,
): Promise<unknown> {
  const whole = WHOLE_REFERENCE.exec(raw);
  if (!whole)
    throw new InvalidInputError(
      `${raw} is not a reference: write \${steps.<id>.<output>}, \${context.<key>} or \${secrets.<name>}`,
      { location },
    );
  return lookup(whole[1] as Namespace, whole[2] as string, whole[3], scope, location);
}

async function resolveString(text: string, scope: ReferenceScope, location: string): Promise<unknown> {
  const whole = WHOLE_REFERENCE.exec(text);
  if (whole) return lookup(whole[1] as Namespace, whole[2] as string, whole[3], scope, location);
  let out = '';
  let last = 0;
  for (const match of text.matchAll(new RegExp(REFERENCE_PATTERN.source, 'g'))) {
    const found = await lookup(match[1] as Namespace, match[2] as string, match[3], scope, location);
    out += text.slice(last, match.index) + (typeof found === 'string' ? found : JSON.stringify(found));
    last = match.index + match[0].length;
  }
  return last === 0 ? text : out + text.slice(last);
}

type Namespace = 'steps' | 'context' | 'secrets';

/** The value one reference as written (`${steps.build.image}`) stands for in `scope`. */
export function lookupReference(raw: string, scope: ReferenceScope, location: string): Promise<unknown> {
  const match = WHOLE_REFERENCE.exec(raw);
  if (!match) throw new InvalidInputError(`${raw} is not a reference`, { location });
  return lookup(match[1] as Namespace, match[2] as string, match[3], scope, location);
}

async function lookup(
  namespace: Namespace,
  first: string,
  second: string | undefined,
  scope: ReferenceScope,
  location: string,
): Promise<unknown> {
  const ref = `\${${namespace}.${first}${second ? `.${second}` : ''}}`;
  const fail = (why: string): never => {
    throw new InvalidInputError(`${ref} ${why}`, { location });
  };
  switch (namespace) {
    case 'secrets': {
      if (second !== undefined) fail(`has too many parts; use \${secrets.${first}}`);
      if (!scope.secrets) fail('cannot be resolved here: no secrets are available');
      return (scope.secrets as SecretSource).resolve(first, location);
    }
    case 'steps': {
      if (second === undefined) fail(`needs an output name: \${steps.${first}.<output>}`);
      const outputs = scope.steps[first];
      if (!outputs) return fail(`refers to step "${first}", which has no recorded outputs yet`);
      if (!Object.hasOwn(outputs, second as string)) {
        return fail(`refers to output "${second}", which step "${first}" did not produce`);
      }
      return outputs[second as string];
    }
    case 'context': {
      if (!Object.hasOwn(scope.context, first))
        return fail(`refers to context key "${first}", which is not set`);
      const top = scope.context[first];
      if (second === undefined) return top;
      if (top === null || typeof top !== 'object' || !Object.hasOwn(top, second)) {
        return fail(`refers to "${second}", which context "${first}" does not have`);
      }
      return (top as Record<string, unknown>)[second];
    }
  }
}
