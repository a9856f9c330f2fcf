/**
 * The quorum-modification attack through the real HTTP edge (`plangate serve`'s platform: the local
 * API Gateway, the approvals Lambda handler, dynalite, the engine). A plan needs two approvals;
 * one approver approves it as shown and the other "approves with modifications" (a step's args
 * replaced), in every order and at once, then tries to get the modified content through on the
 * first approval: stale digests, approving their own revision alone, racing the first approver.
 * An attempt is accepted when the gate decides, or a step starts, without two approvals of the
 * content that would run. Then a control: two approvals of the revision do decide it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_IDENTITY_HEADER } from '../../lib/runtime/api/http.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { echoChainPlan } from '../../tests/support/echo-plan.ts';

const FIRST = 'alice@example.test';
const MODIFIER = 'bob@example.test';
const TAMPERED = { build: { message: 'tampered' } };

/** How the modifier tries it, each run on its own plan. */
const VARIANTS = [
  'approve, then modify',
  'modify, then the first approves the content as first shown',
  'approve, modify, then the first approves again for the content as first shown',
  'approve, modify, then the modifier approves the revision alone',
  'approve and modify at the same moment',
] as const;

export interface QuorumModificationResult {
  readonly attempts: number;
  /** Attempts in which the gate decided, or a step started, without two approvals of what would run. */
  readonly accepted: number;
  readonly byVariant: Record<string, { attempts: number; accepted: number }>;
  /** Answers refused because the content had been modified since (digest-mismatch), each journaled. */
  readonly staleAnswersRefused: number;
  readonly staleRefusalsJournaled: number;
  /** Control: after the attacks, two approvals of a revision decide it, with its modifications. */
  readonly revisionApprovable: boolean;
}

interface Answered {
  readonly status: number;
  readonly body: { status?: string; digest?: string; reason?: string; message?: string };
}

export async function quorumModificationAttack(rounds: number): Promise<QuorumModificationResult> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-quorum-modification-'));
  const gates: ApprovalNotice[] = [];
  const platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    env: {},
    identity: { mode: 'header' },
    onGate: (notice) => gates.push(notice),
  });
  const call = (path: string, who: string, body?: unknown) =>
    fetch(`${platform.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        [LOCAL_IDENTITY_HEADER]: who,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const answer = async (link: string, who: string, body: unknown): Promise<Answered> => {
    const res = await call(`/approvals/${encodeURIComponent(link)}`, who, body);
    return { status: res.status, body: (await res.json()) as Answered['body'] };
  };
  const eventsOf = async (executionArn: string) =>
    (
      (await (await call(`/executions/${encodeURIComponent(executionArn)}/events`, FIRST)).json()) as {
        events: JournalRecord[];
      }
    ).events;
  const submit = async (id: string) => {
    const plan = echoChainPlan(id, ['build', 'ship'], {
      approval: { approvers: [FIRST, MODIFIER], quorum: 2, allowAutoApprove: false },
    });
    const res = await call('/plans', 'submitter@example.test', plan);
    if (res.status !== 201) throw new Error(`submit ${id}: ${res.status} ${await res.text()}`);
    const { executionArn } = (await res.json()) as { executionArn: string };
    for (let i = 0; i < 400; i++) {
      const gate = gates.find((g) => g.plan.id === id);
      if (gate) return { executionArn, link: gate.approvalId, digest: gate.plan.digest };
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no gate for ${id}`);
  };

  const byVariant: Record<string, { attempts: number; accepted: number }> = Object.fromEntries(
    VARIANTS.map((variant) => [variant, { attempts: 0, accepted: 0 }]),
  );
  let attempts = 0;
  let accepted = 0;
  let staleAnswersRefused = 0;
  let staleRefusalsJournaled = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [v, variant] of VARIANTS.entries()) {
        const { executionArn, link, digest } = await submit(`quorum-attack-${round}-${v}`);
        const approve = (who: string, content = digest) =>
          answer(link, who, { digest: content, decision: 'APPROVE' });
        const modify = () =>
          answer(link, MODIFIER, { digest, decision: 'APPROVE_WITH_MODIFICATIONS', argOverrides: TAMPERED });
        const outcomes: Answered[] = [];
        switch (variant) {
          case 'approve, then modify':
            outcomes.push(await approve(FIRST), await modify());
            break;
          case 'modify, then the first approves the content as first shown':
            outcomes.push(await modify(), await approve(FIRST));
            break;
          case 'approve, modify, then the first approves again for the content as first shown':
            outcomes.push(await approve(FIRST), await modify(), await approve(FIRST));
            break;
          case 'approve, modify, then the modifier approves the revision alone': {
            outcomes.push(await approve(FIRST));
            const modified = await modify();
            outcomes.push(modified, await approve(MODIFIER, modified.body.digest));
            break;
          }
          case 'approve and modify at the same moment':
            outcomes.push(...(await Promise.all([approve(FIRST), modify()])));
            break;
        }
        const stale = outcomes.filter(
          (o) => o.status === 409 && /was modified by/.test(o.body.message ?? ''),
        );
        const gate = (await (await call(`/approvals/${encodeURIComponent(link)}`, FIRST)).json()) as {
          status?: string;
          revision?: { digest: string };
        };
        const events = await eventsOf(executionArn);
        const broke =
          outcomes.some((o) => o.body.status === 'decided') ||
          gate.status !== 'pending' ||
          events.some((e) => e.event === 'TASK_STARTED' || e.event === 'GATE_APPROVED');
        attempts++;
        if (broke) accepted++;
        const tally = byVariant[variant] as { attempts: number; accepted: number };
        tally.attempts++;
        if (broke) tally.accepted++;
        staleAnswersRefused += stale.length;
        staleRefusalsJournaled += events.filter(
          (e) => e.event === 'GATE_ANSWER_REFUSED' && e.details.reason === 'digest-mismatch',
        ).length;
        // End the attempt: the first approver rejects what is now asked, so the run stops.
        await answer(link, FIRST, {
          digest: gate.revision?.digest ?? digest,
          decision: 'REJECT',
          reason: 'bench',
        });
      }
    }
    // Control: the revision itself is approvable, by two approvals of it.
    const { link, digest } = await submit('quorum-attack-control');
    const modified = await answer(link, MODIFIER, {
      digest,
      decision: 'APPROVE_WITH_MODIFICATIONS',
      skipSteps: ['ship'],
    });
    const revision = modified.body.digest as string;
    await answer(link, FIRST, { digest: revision, decision: 'APPROVE' });
    const decided = await answer(link, MODIFIER, { digest: revision, decision: 'APPROVE' });
    const decision = (decided.body as { decision?: { decision?: string; skipSteps?: string[] } }).decision;
    return {
      attempts,
      accepted,
      byVariant,
      staleAnswersRefused,
      staleRefusalsJournaled,
      revisionApprovable:
        decided.body.status === 'decided' &&
        decision?.decision === 'APPROVE_WITH_MODIFICATIONS' &&
        decision.skipSteps?.join() === 'ship',
    };
  } finally {
    await platform.close();
    await rm(dir, { recursive: true, force: true });
  }
}
