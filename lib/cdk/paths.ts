/** Where the project's files are, independent of the directory `cdk` or the tests run from. */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const LOCK_FILE = join(PROJECT_ROOT, 'package-lock.json');
export const LAMBDAS_DIR = join(PROJECT_ROOT, 'lambdas');
export const EXAMPLES_DIR = join(PROJECT_ROOT, 'examples');
