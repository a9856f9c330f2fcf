/**
 * The payload contract between compiled state machines (lib/compiler) and the harness
 * Lambdas (lib/runtime + lambdas/): exactly what each Task state sends, what each Lambda
 * must return, the error names Lambdas throw (Retry/Catch match on them), the Fail-state
 * error names of the machine, and the journal event shape.
 *
 * Data flow in a compiled machine (JSONata query language):
 * - Every Lambda is called through `arn:aws:states:::lambda:invoke` (or `.waitForTaskToken`) with
 *   `Payload` = one of the `*Request` objects below; the ASL reads `$states.result.Payload`.
 * - The state that flows between steps is a {@link Ledger}: `{ steps: { <stepId>: StepEntry } }`.
 *   Parallel branches each return their ledger; the Parallel merges them. Nothing else is kept
 *   in the payload, and large step outputs are {@link OutputRef}s, so 256 KiB is never reached.
 * - Lambdas write the journal events themselves (see {@link JournalEvent}); the ASL has no
 *   event-writing states on the happy path.
 * - A thrown error reaches Step Functions as `{ Error: error.name, Cause: error.message }`.
 *   Lambdas throw {@link HarnessFailure}s whose `name` is one of {@link ERROR_NAMES}; the `Cause`
 *   is JSON of {@link FailureCause} (never a secret, never a task token).
 */

export * from './budget.ts';
export * from './call.ts';
export * from './checker.ts';
export * from './child.ts';
export * from './classifier.ts';
export * from './errors.ts';
export * from './gate.ts';
export * from './handoff.ts';
export * from './integrity.ts';
export * from './join.ts';
export * from './journal-event.ts';
export * from './policy.ts';
export * from './recovery-advice.ts';
export * from './rollback.ts';
export * from './runner.ts';
export * from './shared.ts';
