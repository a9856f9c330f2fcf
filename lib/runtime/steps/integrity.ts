/**
 * What was approved is what the engine runs. At submission PLAN_CREATED pins an execution to the
 * hash of its compiled definition (main machine and parts, as deployed) and of the policy set in
 * force (`integrity`, lib/runtime/payloads/integrity.ts). Before anything of a step, its contract
 * or a rollback runs, and when `plangate resume` re-attaches, the definition the engine runs
 * (DescribeStateMachineForExecution for the execution, DescribeStateMachine for each part's
 * version: what Step Functions on AWS answers too) and the policy set in force are compared with
 * the pin; a difference is journaled (INTEGRITY_MISMATCH) and refused.
 *
 * Kept cheap per step: the pin is read once per execution (PLAN_CREATED never changes), the policy
 * set's hash was computed once when it was loaded, and a definition text equal to the one last
 * verified for the execution is not hashed again; what is left is the engine's answer.
 */
import {
  DescribeStateMachineCommand,
  DescribeStateMachineForExecutionCommand,
  type SFNClient,
} from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { z } from 'zod';
import { type HarnessDeps, journalFor, policyFor } from '../deps.ts';
import { firstEvent, type JournalEventInput } from '../journal/journal.ts';
import {
  EVENT_DETAILS,
  type IntegrityCheck,
  type IntegrityMoment,
  type IntegrityPin,
} from '../payloads/index.ts';
import { definitionHash } from '../shared/definition-hash.ts';
import { HarnessError } from '../shared/errors.ts';

export type PlanCreatedDetails = z.infer<(typeof EVENT_DETAILS)['PLAN_CREATED']>;

/** Executions whose PLAN_CREATED is kept per client; enough for every execution one process serves at once. */
const CACHED_EXECUTIONS = 256;
const planCreatedCache = new WeakMap<
  DynamoDBDocumentClient,
  Map<string, Promise<PlanCreatedDetails | undefined>>
>();

/**
 * An execution's PLAN_CREATED details (undefined when its first event is not one), read once per
 * execution per client: the event is immutable, so every later step reads the copy.
 */
export function planCreatedOf(
  dynamo: DynamoDBDocumentClient,
  eventsTable: string | undefined,
  executionId: string,
): Promise<PlanCreatedDetails | undefined> {
  if (eventsTable === undefined) return Promise.resolve(undefined);
  let cache = planCreatedCache.get(dynamo);
  if (!cache) {
    cache = new Map();
    planCreatedCache.set(dynamo, cache);
  }
  const key = `${eventsTable}\t${executionId}`;
  let read = cache.get(key);
  if (!read) {
    read = firstEvent(dynamo, eventsTable, executionId).then((first) => {
      const parsed =
        first?.event === 'PLAN_CREATED' ? EVENT_DETAILS.PLAN_CREATED.safeParse(first.details) : undefined;
      // Not there yet (or not a PLAN_CREATED): ask again next time rather than keep the absence.
      if (!parsed?.success) cache.delete(key);
      return parsed?.success ? parsed.data : undefined;
    });
    if (cache.size >= CACHED_EXECUTIONS) cache.delete(cache.keys().next().value as string);
    cache.set(key, read);
    read.catch(() => cache.delete(key));
  }
  return read;
}

/** Where the definitions an execution runs are read: Step Functions (on AWS or the embedded engine), or a store on disk. */
export interface DefinitionReader {
  /** The definition the execution runs (DescribeStateMachineForExecution). */
  ofExecution(executionArn: string): Promise<string>;
  /** A state machine version's definition (DescribeStateMachine). */
  ofMachine(machineArn: string): Promise<string>;
}

export function sfnDefinitionReader(sfn: SFNClient): DefinitionReader {
  return {
    ofExecution: async (executionArn) =>
      String(
        (await sfn.send(new DescribeStateMachineForExecutionCommand({ executionArn }))).definition ?? '',
      ),
    ofMachine: async (stateMachineArn) =>
      String((await sfn.send(new DescribeStateMachineCommand({ stateMachineArn }))).definition ?? ''),
  };
}

/** The last definition texts verified per execution, and their hash. */
const verifiedTexts = new WeakMap<object, Map<string, { texts: string[]; hash: string }>>();

/**
 * The hash of the definition the engine runs for an execution pinned to `machines`: the
 * execution's own definition, then each part's version, hashed as at submission. A definition
 * that cannot be read is reported as `unreadable: …` (which matches no pin).
 */
export async function runningDefinitionHash(
  reader: DefinitionReader,
  executionArn: string,
  machines: readonly string[],
): Promise<string> {
  let texts: string[];
  try {
    texts = await Promise.all([
      reader.ofExecution(executionArn),
      ...machines.slice(1).map((arn) => reader.ofMachine(arn)),
    ]);
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
  let seen = verifiedTexts.get(reader);
  if (!seen) {
    seen = new Map();
    verifiedTexts.set(reader, seen);
  }
  const last = seen.get(executionArn);
  if (last && last.texts.length === texts.length && last.texts.every((t, i) => t === texts[i]))
    return last.hash;
  let hash: string;
  try {
    hash = definitionHash(texts);
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
  if (seen.size >= CACHED_EXECUTIONS) seen.delete(seen.keys().next().value as string);
  seen.set(executionArn, { texts, hash });
  return hash;
}

/** One comparison that failed: what was pinned, what is in force. */
export interface IntegrityFinding {
  readonly check: IntegrityCheck;
  readonly expected: string;
  readonly found: string;
}

/** The comparisons of an execution with its pin, the definition first; empty when both hold. */
export async function integrityFindings(
  pin: IntegrityPin,
  inForce: {
    readonly executionArn: string;
    readonly definitions?: DefinitionReader;
    readonly policyDigest?: string;
  },
): Promise<IntegrityFinding[]> {
  const findings: IntegrityFinding[] = [];
  if (inForce.definitions) {
    const found = await runningDefinitionHash(inForce.definitions, inForce.executionArn, pin.machines);
    if (found !== pin.definition_hash)
      findings.push({ check: 'definition', expected: pin.definition_hash, found });
  }
  if (inForce.policyDigest !== undefined && inForce.policyDigest !== pin.policy_hash)
    findings.push({ check: 'policy', expected: pin.policy_hash, found: inForce.policyDigest });
  return findings;
}

/** What a finding means and how to go on: the one text the event, the error and the CLI show. */
export function findingMessage(executionArn: string, finding: IntegrityFinding): string {
  const how =
    finding.check === 'definition'
      ? `the definition the engine runs (${finding.found}) is not the one approved (${finding.expected})`
      : `the policy set in force (${finding.found}) is not the one pinned at submission (${finding.expected})`;
  const next =
    finding.check === 'definition'
      ? 'restore the approved definition, or submit the changed plan as a new version through the gate'
      : 'run it under the policies it was submitted with (--policy DIR), or submit the plan as a new version through the gate under the policies now in force';
  return `execution ${executionArn}: ${how}; nothing of it runs: ${next}`;
}

/** Raised where a check refused: nothing of the step (contract, rollback) ran. */
export class IntegrityMismatchError extends HarnessError {
  constructor(
    readonly executionArn: string,
    readonly findings: readonly IntegrityFinding[],
  ) {
    super('IntegrityMismatch', findings.map((f) => findingMessage(executionArn, f)).join('; '));
  }
}

/** Journals INTEGRITY_MISMATCH for each finding (at `at`). */
export async function recordFindings(
  deps: Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'telemetry'>,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
  at: IntegrityMoment,
  findings: readonly IntegrityFinding[],
): Promise<void> {
  const journal = journalFor(deps);
  for (const finding of findings)
    await journal.append({
      ...identity,
      event: 'INTEGRITY_MISMATCH',
      details: { ...finding, at, message: findingMessage(identity.executionId, finding) },
    });
}

/**
 * The check a harness Lambda makes before anything of a step runs: the definition the engine runs
 * and the policy set in force are the pinned ones. Refuses (INTEGRITY_MISMATCH journaled, then
 * {@link IntegrityMismatchError}) when not. An execution without a pin (submitted before pinning)
 * and deps without Step Functions (a unit test's) skip what they cannot compare.
 */
export async function assertPinned(
  deps: HarnessDeps,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
  at: IntegrityMoment,
): Promise<void> {
  const pin = (await planCreatedOf(deps.dynamo, deps.tables.events, identity.executionId))?.integrity;
  if (!pin) return;
  const findings = await integrityFindings(pin, {
    executionArn: identity.executionId,
    definitions: deps.sfn ? readerOf(deps.sfn) : undefined,
    policyDigest: (await policyFor(deps)).digest,
  });
  if (findings.length === 0) return;
  await recordFindings(deps, identity, at, findings);
  throw new IntegrityMismatchError(identity.executionId, findings);
}

/** One reader per client, so its verified texts are kept across steps. */
const readers = new WeakMap<SFNClient, DefinitionReader>();
function readerOf(sfn: SFNClient): DefinitionReader {
  let reader = readers.get(sfn);
  if (!reader) {
    reader = sfnDefinitionReader(sfn);
    readers.set(sfn, reader);
  }
  return reader;
}

/** The reader {@link assertPinned} uses for this client (the gate binds an approval with the same). */
export { readerOf as definitionReaderOf };
