/**
 * The hash an execution's compiled definition is pinned by: SHA-256 over the canonical JSON of the
 * ASL of its main state machine and of every part (child machine), in that order (main first, then
 * the parts in the compiler's order), as deployed (resource ARNs filled in). Canonical JSON makes
 * it independent of key order and spacing; any change of a state, a command or an ARN changes it.
 */
import { canonicalJson } from '../../plan/digest.ts';
import { sha256Hex } from './hash.ts';

export function definitionHash(definitions: readonly string[]): string {
  return `sha256:${sha256Hex(canonicalJson(definitions.map((text) => JSON.parse(text) as unknown)))}`;
}
