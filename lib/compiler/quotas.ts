/**
 * Step Functions' hard quotas that a compiled plan must fit: AWS refuses a larger definition,
 * fails a state whose payload is larger, and fails an execution whose history grows past the limit.
 */
export const STEP_FUNCTIONS_QUOTAS = {
  /** A state machine definition, in UTF-8 bytes (1 MiB). */
  definitionBytes: 1_048_576,
  /** A state's input, output or task request, in UTF-8 bytes (256 KiB). */
  payloadBytes: 262_144,
  /** Events in one execution's history. */
  historyEvents: 25_000,
} as const;
