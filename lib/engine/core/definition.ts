/** Amazon States Language definitions as the interpreter reads them. */

import type { QueryLanguage } from '../types.ts';

/** A states block: the machine itself, a Parallel branch or a Map ItemProcessor. */
export interface StatesBlock {
  readonly StartAt: string;
  readonly States: Record<string, StateDefinition>;
  readonly QueryLanguage?: QueryLanguage;
  readonly TimeoutSeconds?: number;
}

/** One state as written in ASL (fields are read per state type). */
export type StateDefinition = Record<string, unknown> & { readonly Type: string };
