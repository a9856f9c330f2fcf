/**
 * A step's AWS access as its processes get it: the plan AWS role's session for this run,
 * named after the execution (CloudTrail shows the name on every call), its policy exactly the
 * grants the step declared (lib/plan/aws-access.ts, the text the gate showed). A step that
 * declares none runs its processes with no AWS credentials at all.
 */
import { sessionPolicy } from '../../plan/aws-access.ts';
import type { AwsAccess } from '../../plan/schema.ts';
import type { PlanAwsSession } from '../sandbox/plan-process-call.ts';

/** `sts:AssumeRole`'s RoleSessionName for a run: `plangate-<execution name>`, in the characters STS takes. */
export function sessionNameOf(executionId: string): string {
  const name = executionId.split(':').at(-1) ?? executionId;
  return `plangate-${name.replace(/[^\w+=,.@-]/g, '-')}`.slice(0, 64);
}

/** The session of a step's run, when it declares AWS. */
export function planAwsSession(
  executionId: string,
  access: AwsAccess | undefined,
): PlanAwsSession | undefined {
  return access ? { sessionName: sessionNameOf(executionId), policy: sessionPolicy(access) } : undefined;
}
