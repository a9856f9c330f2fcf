/**
 * Building JSONata fields for ASL. Plan data (args, contracts, descriptions) is embedded as a
 * JSONata literal, never as a plain string: a plain string starting with `{%` would be evaluated,
 * and a `${…}` in it would be taken for a definition substitution.
 */

/** `{% expression %}`: a field Step Functions evaluates. Expressions must be single-line. */
export function jsonata(expression: string): string {
  if (/[\n\r\u2028\u2029]/.test(expression)) throw new Error(`JSONata field must be one line: ${expression}`);
  return `{% ${expression} %}`;
}

/**
 * A JSON value as JSONata source (JSON is JSONata), with `$` and line separators escaped so the
 * text never contains `${` or a line break.
 */
export function toJsonataSource(value: unknown): string {
  return JSON.stringify(value ?? null)
    .replace(/\$/g, '\\u0024')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A field whose value is the given JSON value, immune to evaluation and substitution. */
export function literal(value: unknown): string {
  return jsonata(toJsonataSource(value));
}

/** A JSONata string literal. */
export function quote(text: string): string {
  return toJsonataSource(text);
}

/** A JSONata array of string literals, e.g. `["a","b"]`. */
export function quoteList(items: readonly string[]): string {
  return toJsonataSource(items);
}

/** `$lookup(<object>, "<key>")`: safe for keys that are not JSONata names (e.g. `build-image`). */
export function lookup(objectExpression: string, key: string): string {
  return `$lookup(${objectExpression}, ${quote(key)})`;
}
