/** ASL timestamps: RFC 3339 with an uppercase T and Z (or a numeric offset), compared as instants. */

/** An instant with nanosecond precision, ordered by (seconds, nanos). */
export interface Instant {
  readonly epochSeconds: number;
  readonly nanos: number;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Parses an ASL timestamp, or returns undefined when the text is not one. */
export function parseTimestamp(text: unknown): Instant | undefined {
  if (typeof text !== 'string') return undefined;
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return undefined;
  const zone = m[8] as string;
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const [oh, om] = zone.slice(1).split(':').map(Number) as [number, number];
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const utc = Date.UTC(year, month - 1, day, hour, minute, second);
  const shifted = new Date(utc);
  shifted.setUTCFullYear(year); // Date.UTC maps years 0..99 to 1900..1999
  const epochSeconds = shifted.getTime() / 1000 - offsetMinutes * 60;
  const nanos = Number((m[7] ?? '').padEnd(9, '0'));
  return { epochSeconds, nanos };
}

export function compareInstants(a: Instant, b: Instant): number {
  return a.epochSeconds === b.epochSeconds ? a.nanos - b.nanos : a.epochSeconds - b.epochSeconds;
}
