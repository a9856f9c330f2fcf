/**
 * The condition operators of IAM's policy grammar that this simulator evaluates, as AWS documents
 * them: every operator of a block and every key of an operator must hold; a key holds when the
 * request's value matches any of the listed values (for a negated operator: none of them). A key
 * the request lacks fails a positive operator and satisfies a negated one, and `…IfExists`
 * operators hold when the key is absent. Any other operator (ForAllValues:, ForAnyValue:,
 * Numeric…, Date…, IpAddress, Binary…) is not guessed at: it is an
 * {@link UnknownConditionOperatorError}, and the evaluator refuses the request.
 */
import type { ConditionBlock } from './policy-document.ts';
import { matchesWildcard } from './wildcard.ts';

/** The request's condition keys (`aws:PrincipalArn`, …), single-valued; names compare without case. */
export type ConditionContext = Readonly<Record<string, string>>;

export class UnknownConditionOperatorError extends Error {
  override readonly name = 'UnknownConditionOperatorError';
  constructor(readonly operator: string) {
    super(
      `condition operator ${operator} is not implemented by the IAM simulator: the request is denied (fail closed); implement it in lib/aws-local/iam/conditions.ts`,
    );
  }
}

type Compare = (value: string, listed: string) => boolean;

const stringEquals: Compare = (v, l) => v === l;
const stringEqualsIgnoreCase: Compare = (v, l) => v.toLowerCase() === l.toLowerCase();
const stringLike: Compare = (v, l) => matchesWildcard(l, v);
const bool: Compare = (v, l) => v.toLowerCase() === l.toLowerCase();

/** Operator (without IfExists) → how one value compares with one listed value, and whether it is negated. */
const OPERATORS: Readonly<Record<string, { compare: Compare; negated: boolean }>> = {
  StringEquals: { compare: stringEquals, negated: false },
  StringNotEquals: { compare: stringEquals, negated: true },
  StringEqualsIgnoreCase: { compare: stringEqualsIgnoreCase, negated: false },
  StringNotEqualsIgnoreCase: { compare: stringEqualsIgnoreCase, negated: true },
  StringLike: { compare: stringLike, negated: false },
  StringNotLike: { compare: stringLike, negated: true },
  // ARNs compare as wildcard patterns for both Equals and Like, as IAM does.
  ArnEquals: { compare: stringLike, negated: false },
  ArnLike: { compare: stringLike, negated: false },
  ArnNotEquals: { compare: stringLike, negated: true },
  ArnNotLike: { compare: stringLike, negated: true },
  Bool: { compare: bool, negated: false },
};

/** Whether the simulator evaluates `operator` (else a statement using it denies the request). */
export function isImplementedOperator(operator: string): boolean {
  const base = operator.endsWith('IfExists') ? operator.slice(0, -'IfExists'.length) : operator;
  return operator === 'Null' || Object.hasOwn(OPERATORS, base);
}

/** Whether every condition of `block` holds for `context`; throws on an operator not implemented. */
export function conditionsHold(block: ConditionBlock | undefined, context: ConditionContext): boolean {
  if (!block) return true;
  const lowerContext = new Map(Object.entries(context).map(([k, v]) => [k.toLowerCase(), v]));
  // Every operator is checked before any result is used, so an unknown one is never skipped.
  const results = Object.entries(block).map(([operator, keys]) => {
    if (operator === 'Null')
      return Object.entries(keys).every(([key, listed]) =>
        listed.every((l) => (l.toLowerCase() === 'true') === !lowerContext.has(key.toLowerCase())),
      );
    const ifExists = operator.endsWith('IfExists');
    const spec = OPERATORS[ifExists ? operator.slice(0, -'IfExists'.length) : operator];
    if (!spec) throw new UnknownConditionOperatorError(operator);
    return Object.entries(keys).every(([key, listed]) => {
      const value = lowerContext.get(key.toLowerCase());
      if (value === undefined) return ifExists || spec.negated;
      const any = listed.some((l) => spec.compare(value, l));
      return spec.negated ? !any : any;
    });
  });
  return results.every(Boolean);
}
