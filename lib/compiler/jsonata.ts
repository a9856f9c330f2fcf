/**
 * Building JSONata fields for ASL. Plan data (args, contracts, descriptions) is embedded as a
 * JSONata literal, never as a plain string: a plain string starting with `{%` would be evaluated,
 * and a `${…}` in it would be taken for a definition substitution.
 */

/**
 * `{% expression %}`: a field Step Functions evaluates. Expressions must be single-line. The
 * building blocks write readable expressions; what is deployed is {@link minify}d, since a
 * definition's bytes are billed against the 1 MB quota on every step.
 */
export function jsonata(expression: string): string {
  if (/[\n\r\u2028\u2029]/.test(expression)) throw new Error(`JSONata field must be one line: ${expression}`);
  return `{% ${minify(expression)} %}`;
}

const NAME_CHAR = /[A-Za-z0-9_$]/;

/**
 * `expression` without the whitespace JSONata ignores: all of it outside string literals and
 * back-quoted names, except one space between two name characters (`$k in x`, `a and b`).
 */
export function minify(expression: string): string {
  let out = '';
  let quoteChar: string | undefined;
  let pendingSpace = false;
  for (let i = 0; i < expression.length; i++) {
    const ch = expression[i] as string;
    if (quoteChar !== undefined) {
      out += ch;
      if (ch === '\\' && quoteChar !== '`') {
        out += expression[i + 1] ?? '';
        i += 1;
      } else if (ch === quoteChar) quoteChar = undefined;
      continue;
    }
    if (/\s/.test(ch)) {
      pendingSpace = true;
      continue;
    }
    if (pendingSpace && NAME_CHAR.test(out.at(-1) ?? '') && NAME_CHAR.test(ch)) out += ' ';
    pendingSpace = false;
    if (ch === '"' || ch === "'" || ch === '`') quoteChar = ch;
    out += ch;
  }
  return out;
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
