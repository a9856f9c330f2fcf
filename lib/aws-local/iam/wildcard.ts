/**
 * IAM's wildcards in actions and resource ARNs: `*` any run of characters (none included, `:` and
 * `/` too), `?` exactly one. Matched with the two-pointer glob walk (backtracking only to the last
 * `*`), so a pattern of many stars costs at most pattern × value steps.
 */

export interface WildcardOptions {
  /** Actions compare without case (`DynamoDB:putitem` is `dynamodb:PutItem`); ARNs with it. */
  readonly ignoreCase?: boolean;
}

export function matchesWildcard(pattern: string, value: string, options: WildcardOptions = {}): boolean {
  const p = options.ignoreCase ? pattern.toLowerCase() : pattern;
  const v = options.ignoreCase ? value.toLowerCase() : value;
  let pi = 0;
  let vi = 0;
  let star = -1;
  let resume = 0;
  while (vi < v.length) {
    const c = p[pi];
    if (c === '*') {
      star = pi++;
      resume = vi;
    } else if (c !== undefined && (c === '?' || c === v[vi])) {
      pi++;
      vi++;
    } else if (star >= 0) {
      pi = star + 1;
      vi = ++resume;
    } else return false;
  }
  while (p[pi] === '*') pi++;
  return pi === p.length;
}
