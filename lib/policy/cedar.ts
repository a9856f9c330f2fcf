/**
 * Cedar itself: the maintained `@cedar-policy/cedar-wasm` package, its WebAssembly compiled and
 * instantiated once per process on first use (a dynamic import, so commands that decide nothing
 * never pay for it). The .wasm file is found through Node's resolution (a checkout, an npm
 * install), else beside the module that asks, which in a Lambda is the bundle:
 * lib/cdk/harness-function.ts copies it next to every bundle that contains Cedar.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import type * as CedarWasm from '@cedar-policy/cedar-wasm/web';

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
} from '@cedar-policy/cedar-wasm/web';

/** The package's .wasm file name, for the CDK to ship beside a bundle that contains Cedar. */
export const CEDAR_WASM_FILE = 'cedar_wasm_bg.wasm';

/** Where Cedar's .wasm file is: in the installed package, else beside this module (or the bundle holding it). */
export function cedarWasmPath(): string {
  try {
    // `./web` is exported for `import` only; `./nodejs` (its sibling folder) resolves for `require` too.
    const nodejs = createRequire(import.meta.url).resolve('@cedar-policy/cedar-wasm/nodejs');
    return path.join(path.dirname(nodejs), '..', 'web', CEDAR_WASM_FILE);
  } catch {
    const beside = fileURLToPath(new URL(`./${CEDAR_WASM_FILE}`, import.meta.url));
    if (existsSync(beside)) return beside;
    throw new Error(`${CEDAR_WASM_FILE} not found: neither @cedar-policy/cedar-wasm nor ${beside} exists`);
  }
}

let loading: Promise<Cedar> | undefined;

/** The Cedar module, its WebAssembly instantiated once per process. */
export function cedar(): Promise<Cedar> {
  loading ??= import('@cedar-policy/cedar-wasm/web').then((module): Cedar => {
    // Compiled by V8's baseline tier alone, as the shell grammar's WebAssembly is
    // (lib/plan/shell/grammar.ts toggles the same flag): compiled under the other setting after
    // that toggle, a process deciding thousands of times crashed in V8's deoptimizer (bench/policy.ts,
    // 3 of 7 runs; 0 of 8 with either this or no toggle at all).
    setFlagsFromString('--liftoff-only');
    try {
      module.initSync({ module: readFileSync(cedarWasmPath()) });
    } finally {
      setFlagsFromString('--no-liftoff-only');
    }
    return module;
  });
  return loading;
}
