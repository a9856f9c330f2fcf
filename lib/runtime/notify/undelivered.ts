/**
 * A gate's notice that reached nobody fails visibly: the notifier journals
 * GATE_NOTICE_UNDELIVERED in the gate's execution (so `GET /plans/{id}` says so beside the gate,
 * and its shared link is still there for the submitter to pass on), logs an error and counts
 * GateNoticeUndelivered, which the platform's alarm watches.
 */

import type { z } from 'zod';
import { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import type { ApprovalNotice, EVENT_DETAILS } from '../payloads/index.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';

type Details = z.infer<(typeof EVENT_DETAILS)['GATE_NOTICE_UNDELIVERED']>;

/** Why a notice reached nobody. */
export type Undelivered = Pick<Details, 'reason' | 'message'>;

/** Told of a notice that reached nobody. */
export type UndeliveredListener = (notice: ApprovalNotice, why: Undelivered) => Promise<void>;

/**
 * The notifier's listener: the error and the metric first (they need no permission beyond the
 * function's logs), then the journal event; a journal that cannot be written is logged too.
 */
export function undeliveredReporter(deps: {
  readonly journal: Journal;
  readonly telemetry?: Telemetry;
}): UndeliveredListener {
  return async (notice, why) => {
    const correlation = {
      execution: notice.executionId,
      plan: notice.plan.id,
      planVersion: notice.plan.version,
      gate: notice.kind,
      ...(notice.stepId ? { step: notice.stepId } : {}),
    };
    deps.telemetry?.noticeUndelivered(correlation, why);
    try {
      await deps.journal.append({
        ...eventIdentity(notice, notice.stepId ? { id: notice.stepId, name: notice.description } : undefined),
        event: 'GATE_NOTICE_UNDELIVERED',
        details: {
          gate: notice.kind,
          link_id: notice.approvalId,
          ...(notice.stage ? { stage: notice.stage } : {}),
          reason: why.reason,
          message: why.message,
        } satisfies Details,
      });
    } catch (error) {
      deps.telemetry?.reportError(correlation, 'GATE_NOTICE_UNDELIVERED could not be journaled', error);
    }
  };
}
