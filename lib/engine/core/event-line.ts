/**
 * The JSON line of a stored event, exactly `JSON.stringify(event) + '\n'`. Durable executions
 * write every event, so the frequent shapes (the fixed header, `*StateEntered`/`*StateExited`
 * details and exit bookkeeping) are written field by field, which is several times cheaper than
 * the generic walk; any other shape goes through JSON.stringify.
 */
import type { StoredEvent } from './history.ts';

export function eventLine(e: StoredEvent): string {
  let line = `{"id":${num(e.id)},"prev":${num(e.prev)},"ts":${num(e.ts)},"type":${JSON.stringify(e.type)},"key":${JSON.stringify(e.key)}`;
  if (e.details !== undefined)
    line += `,"details":${payloadDetailsJson(e.details) ?? JSON.stringify(e.details)}`;
  if (e.internal !== undefined) line += `,"internal":${exitJson(e.internal) ?? JSON.stringify(e.internal)}`;
  return `${line}}\n`;
}

/** A number as JSON writes it (non-finite numbers become null). */
function num(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}

/** `{ name, input|output: text, inputDetails|outputDetails: { truncated: false } }`, or undefined for any other shape. */
function payloadDetailsJson(details: Record<string, unknown>): string | undefined {
  let count = 0;
  let payloadKey = '';
  for (const key in details) {
    count++;
    if (count === 1 ? key !== 'name' : count === 2 ? key !== 'input' && key !== 'output' : count > 3) {
      return undefined;
    }
    if (count === 2) payloadKey = key;
    else if (count === 3 && key !== `${payloadKey}Details`) return undefined;
  }
  if (count !== 3) return undefined;
  const name = details.name;
  const payload = details[payloadKey];
  if (typeof name !== 'string' || typeof payload !== 'string') return undefined;
  if (!isNotTruncated(details[`${payloadKey}Details`])) return undefined;
  return `{"name":${JSON.stringify(name)},"${payloadKey}":${JSON.stringify(payload)},"${payloadKey}Details":{"truncated":false}}`;
}

function isNotTruncated(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let count = 0;
  for (const key in value) {
    if (key !== 'truncated' || ++count > 1) return false;
  }
  return count === 1 && (value as { truncated: unknown }).truncated === false;
}

/** `{ entered: number, next?: string }` as exits record them, or undefined for any other shape. */
function exitJson(internal: Record<string, unknown>): string | undefined {
  let count = 0;
  for (const key in internal) {
    count++;
    if (count === 1 ? key !== 'entered' : count !== 2 || key !== 'next') return undefined;
  }
  const entered = internal.entered;
  if (typeof entered !== 'number' || !Number.isFinite(entered)) return undefined;
  if (count === 1) return `{"entered":${entered}}`;
  const next = internal.next;
  return typeof next === 'string' ? `{"entered":${entered},"next":${JSON.stringify(next)}}` : undefined;
}
