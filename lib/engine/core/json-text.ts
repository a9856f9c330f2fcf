/**
 * JSON text of state payloads for history events, serialized once where one value is both a
 * state's output and the next state's input. Payloads are immutable while the engine moves them
 * from state to state (data flow always builds new values), so the same object has the same text;
 * the memo is dropped once a value has been handed to anything outside the engine (a service call).
 */
import type { PayloadTextMemo } from '../types.ts';

/** One engine's memo of the last payload serialized, and of the last timestamp formatted. */
export class PayloadTexts implements PayloadTextMemo {
  private lastValue: object | undefined;
  private lastText = '';
  private lastMillis = Number.NaN;
  private lastIso = '';

  /**
   * `JSON.stringify(value)` of a JSON value, reusing the text of the last object serialized here
   * (`undefined`, which JSON cannot hold, has no text: callers check for it first).
   */
  of(value: unknown): string {
    if (typeof value !== 'object' || value === null) return JSON.stringify(value);
    if (value === this.lastValue) return this.lastText;
    const text = JSON.stringify(value);
    this.lastValue = value;
    this.lastText = text;
    return text;
  }

  /** Records the text a value was just parsed from (a service's answer), for {@link of}. */
  remember(value: unknown, text: string): void {
    if (typeof value !== 'object' || value === null) return;
    this.lastValue = value;
    this.lastText = text;
  }

  /** Forgets the memo: called before a value leaves the engine's hands. */
  forget(): void {
    this.lastValue = undefined;
    this.lastText = '';
  }

  /** `new Date(ms).toISOString()`, reusing the text while the clock stays within one millisecond. */
  isoTime(ms: number): string {
    if (ms !== this.lastMillis) {
      this.lastMillis = ms;
      this.lastIso = new Date(ms).toISOString();
    }
    return this.lastIso;
  }
}
