/**
 * Cedar itself: the maintained `@cedar-policy/cedar-wasm` build for Node, compiled and
 * instantiated once per process on first use (a dynamic import, so commands that decide nothing
 * never pay for it). In a Lambda bundle the .wasm file sits beside the bundle
 * (lib/cdk/harness-function.ts copies it).
 */
import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';

/** The part of Cedar's API plangate uses. */
export type Cedar = Pick<
  typeof CedarWasm,
  | 'statefulIsAuthorized'
  | 'preparsePolicySet'
  | 'preparseSchema'
  | 'validate'
  | 'policyToJson'
  | 'schemaToText'
  | 'getCedarVersion'
>;
export type {
  AuthorizationAnswer,
  DetailedError,
  EntityJson,
  SchemaJson,
} from '@cedar-policy/cedar-wasm/nodejs';

/** The package's .wasm file name, for the CDK to ship beside a bundle that contains Cedar. */
export const CEDAR_WASM_FILE = 'cedar_wasm_bg.wasm';

let loading: Promise<Cedar> | undefined;

/** The Cedar module, loaded once per process. */
export function cedar(): Promise<Cedar> {
  // A CommonJS module: Node (and esbuild's bundle) give its exports as `default`.
  loading ??= import('@cedar-policy/cedar-wasm/nodejs').then((module): Cedar => module.default);
  return loading;
}
