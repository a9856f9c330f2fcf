/**
 * Who may read a local store's journal (`plangate status`, `events`, `logs`, `audit`): decided by
 * the policy of the process that holds the store (serve, run, resume record theirs in the store
 * when they start), never by a `--policy` or PLANGATE_POLICY_DIR the reader picks. A store no
 * holder has recorded a policy in is read under the shipped set. The reader is the OS user.
 */
import { userInfo } from 'node:os';
import { denialMessage } from '../policy/decisions.ts';
import { AUDIT_TRAIL, executionEntity } from '../policy/entities.ts';
import { defaultPolicyDir, type PolicyRequest, PolicySet } from '../policy/policy-set.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { readStorePolicy, type StorePaths } from './store-directory.ts';

/** The policy a store's reads are decided by: its holder's, else the shipped set. */
export async function storeReadPolicy(paths: StorePaths): Promise<PolicySet> {
  return PolicySet.load((await readStorePolicy(paths)) ?? defaultPolicyDir());
}

/** Who reads: the OS user running the reader. */
export function localReader(): { name: string } {
  return { name: userInfo().username };
}

/** ReadAudit of the journal (`query`: the audit subcommand). */
export function auditReadRequest(query: string): PolicyRequest {
  return { principal: localReader(), action: 'ReadAudit', resource: AUDIT_TRAIL, context: { query } };
}

/** ReadExecution of the execution whose first event is `created`. */
export function executionReadRequest(created: JournalRecord, view: 'status' | 'events'): PolicyRequest {
  const submitter = created.details.submitted_by;
  return {
    principal: localReader(),
    action: 'ReadExecution',
    resource: executionEntity({
      id: created.executionId,
      planId: created.planId,
      planVersion: created.planVersion,
      submitter: typeof submitter === 'string' ? submitter : undefined,
    }),
    context: { view },
  };
}

/** Why `policy` refuses the read, as one line, or undefined when it allows it. */
export function readRefusal(policy: PolicySet, request: PolicyRequest): string | undefined {
  const decided = policy.authorize(request);
  return decided.decision === 'allow' ? undefined : denialMessage(request, decided);
}
