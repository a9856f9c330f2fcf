/**
 * JSON text of state payloads for history events, serialized once where one value is both a
 * state's output and the next state's input. Payloads are immutable while the engine moves them
 * from state to state (data flow always builds new values), so the same object has the same text;
 * the memo is dropped once a value has been handed to anything outside the engine (a service call).
 */

let lastValue: object | undefined;
let lastText = '';

/** `JSON.stringify(value)`, reusing the text of the last object serialized here. */
export function payloadText(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (value === lastValue) return lastText;
  const text = JSON.stringify(value);
  lastValue = value;
  lastText = text;
  return text;
}

/** Records the text a value was just parsed from (a service's answer), for {@link payloadText}. */
export function rememberPayloadText(value: unknown, text: string): void {
  if (typeof value !== 'object' || value === null) return;
  lastValue = value;
  lastText = text;
}

/** Forgets the memo: called before a value leaves the engine's hands. */
export function forgetPayloadText(): void {
  lastValue = undefined;
  lastText = '';
}

let lastMillis = Number.NaN;
let lastIso = '';

/** `new Date(ms).toISOString()`, reusing the text while the clock stays within one millisecond. */
export function isoTime(ms: number): string {
  if (ms !== lastMillis) {
    lastMillis = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
