/**
 * The plan's content digest: SHA-256 of canonical JSON (sorted keys, no whitespace) of
 * the defaults-applied plan. Approval binds to it, so every semantic field counts and
 * only the lifecycle `status` (which changes as the plan runs) is left out.
 */
import { createHash } from 'node:crypto';
import { type Plan, type PlanInput, PlanSchema } from './schema.ts';

/** Fields that change as the plan moves through its lifecycle, not what it does. */
const NON_SEMANTIC = new Set(['status']);

/** `sha256:<hex>` is how the CLI shows it; this returns the bare hex. */
export function planDigest(plan: Plan | PlanInput): string {
  const full: Record<string, unknown> = { ...PlanSchema.parse(plan) };
  for (const key of NON_SEMANTIC) delete full[key];
  return createHash('sha256').update(canonicalJson(full)).digest('hex');
}

/**
 * JSON with object keys sorted by code unit, arrays in order, `undefined` members left
 * out (like JSON.stringify). Iterative, so depth is no concern.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  type Task = { value: unknown } | { text: string };
  const stack: Task[] = [{ value }];
  while (stack.length > 0) {
    const task = stack.pop()!;
    if ('text' in task) {
      out.push(task.text);
      continue;
    }
    const v = task.value;
    if (v === null || typeof v !== 'object') {
      out.push(scalarJson(v));
      continue;
    }
    const json = (v as { toJSON?: () => unknown }).toJSON;
    if (typeof json === 'function') {
      stack.push({ value: json.call(v) });
      continue;
    }
    const parts: Task[] = [];
    if (Array.isArray(v)) {
      parts.push({ text: '[' });
      v.forEach((item, i) => {
        if (i > 0) parts.push({ text: ',' });
        parts.push({ value: item === undefined || typeof item === 'function' ? null : item });
      });
      parts.push({ text: ']' });
    } else {
      const keys = Object.keys(v)
        .filter(
          (k) =>
            (v as Record<string, unknown>)[k] !== undefined &&
            typeof (v as Record<string, unknown>)[k] !== 'function',
        )
        .sort();
      parts.push({ text: '{' });
      keys.forEach((k, i) => {
        parts.push({ text: `${i > 0 ? ',' : ''}${JSON.stringify(k)}:` });
        parts.push({ value: (v as Record<string, unknown>)[k] });
      });
      parts.push({ text: '}' });
    }
    for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]!);
  }
  return out.join('');
}

function scalarJson(value: unknown): string {
  if (typeof value === 'number')
    return Number.isFinite(value) ? JSON.stringify(value === 0 ? 0 : value) : 'null';
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value) ?? 'null';
}
