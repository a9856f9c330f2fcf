/**
 * The recorded-AWS conformance cases: PLANGATE_CONFORMANCE_DIR if set, else the copy kept in
 * tests/fixtures/conformance (taken from ../shared/conformance; Apache-2.0, see its licence file),
 * so the suite runs the same on any machine.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONFORMANCE_DIR =
  process.env.PLANGATE_CONFORMANCE_DIR ?? fileURLToPath(new URL('./fixtures/conformance', import.meta.url));
export const CONFORMANCE_CASES = path.join(CONFORMANCE_DIR, 'cases');
