import jsonata from 'jsonata';

/**
 * JSONata fields hold either a literal value or a string `{% expression %}`; a string that only
 * starts or ends with the delimiters is a literal.
 */
export function jsonataExpression(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed.startsWith('{%') && trimmed.endsWith('%}') && trimmed.length >= 4) return trimmed.slice(2, -2);
  return undefined;
}

/** Returns why a JSONata expression does not parse, or undefined. */
export function jsonataSyntaxError(expression: string): string | undefined {
  if (expression.trim() === '') return 'the JSONata expression is empty';
  try {
    jsonata(expression);
    return undefined;
  } catch (error) {
    const { message, position } = error as { message?: string; position?: number };
    return `invalid JSONata expression "${expression.trim()}": ${message ?? String(error)}${position === undefined ? '' : ` (at position ${position})`}`;
  }
}
