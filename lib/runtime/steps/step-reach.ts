/**
 * What a step's processes (its tool, command contract and rollback) may reach beyond the
 * workspace, as the step declared it and the gate showed it: its AWS session (`aws`, the plan AWS
 * role for this run: ./plan-aws.ts) and its hosts (`network`, through the sandbox's proxy).
 * A step that declares neither runs its processes with no AWS credentials and no network.
 */
import type { AwsAccess, NetworkAccess } from '../../plan/schema.ts';
import type { NetworkRecord } from '../sandbox/plan-process-call.ts';
import { type SandboxScope, withSandboxScope } from '../sandbox/sandbox.ts';
import type { Redactor } from '../secrets/redact.ts';
import { planAwsSession } from './plan-aws.ts';

/** What the step declared, as its payloads carry it. */
export interface StepReach {
  readonly aws?: AwsAccess;
  readonly network?: NetworkAccess;
}

/**
 * Runs `use` with the step's AWS session and hosts for every plan process it starts; what those
 * processes asked of the network proxy is appended to `networkLog` (also when `use` throws).
 */
export function withStepReach<T>(
  executionId: string,
  reach: StepReach,
  use: () => Promise<T>,
  networkLog?: NetworkRecord[],
): Promise<T> {
  const aws = planAwsSession(executionId, reach.aws);
  const scope: SandboxScope = {
    ...(aws ? { aws } : {}),
    ...(reach.network ? { network: reach.network, ...(networkLog ? { networkLog } : {}) } : {}),
  };
  return scope.aws || scope.network ? withSandboxScope(scope, use) : use();
}

/** The proxy's records of the step's processes, for its journal (a secret in a URL redacted). */
export function networkReport(
  network: readonly NetworkRecord[],
  redactor: Redactor,
): { network?: NetworkRecord[] } {
  return network.length > 0 ? { network: redactor.value(network) as NetworkRecord[] } : {};
}
