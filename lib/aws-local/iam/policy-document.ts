/**
 * An IAM policy document as a template writes it once its intrinsics are resolved to strings: the
 * statements (Allow/Deny; Action or NotAction; Resource or NotResource; Principal for a resource
 * policy; Condition). Anything else in a statement is refused by the schema, so a field this
 * simulator would not evaluate (NotPrincipal among them) is an error, never silently ignored.
 */
import { z } from 'zod';

const Strings = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : [v]));

/** `{ Operator: { key: value | [values] } }`; booleans and numbers are compared as their text. */
const ConditionValue = z
  .union([z.string(), z.boolean(), z.number()])
  .transform(String)
  .array()
  .or(z.union([z.string(), z.boolean(), z.number()]).transform((v) => [String(v)]));
export const ConditionBlockSchema = z.record(z.string(), z.record(z.string(), ConditionValue));
export type ConditionBlock = z.output<typeof ConditionBlockSchema>;

/** `"*"`, or `{ AWS | Service | Federated: … }`. */
const PrincipalSchema = z.union([
  z.literal('*'),
  z.strictObject({
    AWS: Strings.optional(),
    Service: Strings.optional(),
    Federated: Strings.optional(),
  }),
]);
export type Principal = z.output<typeof PrincipalSchema>;

export const StatementSchema = z
  .strictObject({
    Sid: z.string().optional(),
    Effect: z.enum(['Allow', 'Deny']),
    Action: Strings.optional(),
    NotAction: Strings.optional(),
    Resource: Strings.optional(),
    NotResource: Strings.optional(),
    Principal: PrincipalSchema.optional(),
    Condition: ConditionBlockSchema.optional(),
  })
  .refine((s) => (s.Action === undefined) !== (s.NotAction === undefined), {
    message: 'a statement has exactly one of Action and NotAction',
  })
  .refine((s) => (s.Resource === undefined) !== (s.NotResource === undefined), {
    message: 'a statement has exactly one of Resource and NotResource',
  });
export type Statement = z.output<typeof StatementSchema>;

export const PolicyDocumentSchema = z.object({
  Version: z.literal('2012-10-17'),
  Statement: z
    .union([StatementSchema, z.array(StatementSchema)])
    .transform((s) => (Array.isArray(s) ? s : [s])),
});
export type PolicyDocument = z.output<typeof PolicyDocumentSchema>;

/** A document with where it came from, so a decision can say which statement decided it. */
export interface NamedPolicy {
  /** e.g. `PlatformStepRunnerHandlerRoleDefaultPolicy2AF5D029` or `PlatformEventsTableF6C23059 (resource policy)` */
  readonly name: string;
  readonly document: PolicyDocument;
}
