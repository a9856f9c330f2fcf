/**
 * A subset of EventBridge event patterns, enough for subscribers and local rules:
 * exact values (`["a", "b"]`), nested objects, `{ "prefix": "x" }`, `{ "suffix": "x" }`,
 * `{ "anything-but": v | [v] }`, `{ "exists": bool }` and `{ "numeric": [op, n, ...] }`.
 * An event field that is an array matches when any element matches.
 */
export type EventPattern = { readonly [key: string]: readonly unknown[] | EventPattern };

/** Checks a pattern's shape; returns a located problem or undefined. */
export function patternProblem(pattern: unknown, path = ''): string | undefined {
  if (pattern === null || typeof pattern !== 'object' || Array.isArray(pattern)) {
    return `${path || 'pattern'}: must be an object`;
  }
  for (const [key, value] of Object.entries(pattern)) {
    const at = path ? `${path}.${key}` : key;
    if (Array.isArray(value)) {
      if (value.length === 0) return `${at}: an empty list matches nothing`;
      continue;
    }
    const problem = patternProblem(value, at);
    if (problem) return problem;
  }
  return undefined;
}

export function matchesPattern(event: unknown, pattern: EventPattern): boolean {
  for (const [key, rule] of Object.entries(pattern)) {
    const value =
      event !== null && typeof event === 'object' ? (event as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(rule)) {
      if (!matchesAny(value, rule)) return false;
    } else if (!matchesPattern(value, rule as EventPattern)) {
      return false;
    }
  }
  return true;
}

function matchesAny(value: unknown, rules: readonly unknown[]): boolean {
  return rules.some((rule) => {
    if (rule !== null && typeof rule === 'object' && 'exists' in rule) {
      return (rule as { exists: boolean }).exists === (value !== undefined);
    }
    if (value === undefined) return false;
    const values = Array.isArray(value) ? value : [value];
    return values.some((v) => matchesOne(v, rule));
  });
}

function matchesOne(value: unknown, rule: unknown): boolean {
  if (rule === null || typeof rule !== 'object') return value === rule;
  const r = rule as Record<string, unknown>;
  if (typeof r.prefix === 'string') return typeof value === 'string' && value.startsWith(r.prefix);
  if (typeof r.suffix === 'string') return typeof value === 'string' && value.endsWith(r.suffix);
  if ('anything-but' in r) {
    const but = r['anything-but'];
    return !(Array.isArray(but) ? but : [but]).some((b) => matchesOne(value, b));
  }
  if (Array.isArray(r.numeric)) return typeof value === 'number' && matchesNumeric(value, r.numeric);
  return false;
}

function matchesNumeric(value: number, ops: readonly unknown[]): boolean {
  for (let i = 0; i + 1 < ops.length; i += 2) {
    const bound = ops[i + 1] as number;
    const ok =
      ops[i] === '='
        ? value === bound
        : ops[i] === '<'
          ? value < bound
          : ops[i] === '<='
            ? value <= bound
            : ops[i] === '>'
              ? value > bound
              : ops[i] === '>='
                ? value >= bound
                : false;
    if (!ok) return false;
  }
  return true;
}
