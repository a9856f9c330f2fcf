/** AWS JSON 1.0 wire conventions: timestamps are epoch seconds, absent members are omitted. */
export function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.getTime() / 1000;
  if (Array.isArray(value)) return value.map(toWire);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined || key === '$metadata') continue;
      out[key] = toWire(member);
    }
    return out;
  }
  return value;
}
