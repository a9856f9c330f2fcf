/** The events of seed 000 (plus the gate's clarification request and the permission stop) and their shape. */
import { z } from 'zod';

export const EVENT_NAMES = [
  'PLAN_CREATED',
  'GATE_APPROVAL_REQUESTED',
  'GATE_APPROVED',
  'GATE_REJECTED',
  'GATE_CLARIFICATION_REQUESTED',
  'TASK_STARTED',
  'TASK_COMPLETED',
  'TASK_FAILED',
  'FAILURE_DETECTED',
  'FAILURE_CLASSIFIED',
  'RECOVERY_APPLIED',
  'RECOVERY_ESCALATION',
  'PERMISSION_REQUIRED',
  'EXECUTION_COMPLETE',
] as const;
export const EventNameSchema = z.enum(EVENT_NAMES);
export type EventName = z.infer<typeof EventNameSchema>;

/** An event as a caller hands it to the journal. */
export const JournalEventInputSchema = z.strictObject({
  event: EventNameSchema,
  planId: z.string().min(1),
  planVersion: z.number().int().min(1),
  planDigest: z.string().min(1),
  executionId: z.string().min(1),
  taskId: z.string().min(1).optional(),
  taskName: z.string().optional(),
  /** Who decided, for gate decisions (indexed for auditors). */
  approver: z.string().min(1).optional(),
  details: z.record(z.string(), z.unknown()).default({}),
  /** @default now */
  timestamp: z.iso.datetime().optional(),
});
export type JournalEventInput = z.input<typeof JournalEventInputSchema>;

/** An event as stored in the events table and published on the bus. */
export interface StoredEvent {
  readonly timestamp: string;
  readonly event: EventName;
  readonly planId: string;
  readonly planVersion: number;
  readonly planDigest: string;
  readonly executionId: string;
  readonly taskId?: string;
  readonly taskName?: string;
  readonly approver?: string;
  readonly details: Readonly<Record<string, unknown>>;
  /** Zero-padded per-execution sequence number, from 1. */
  readonly seq: string;
  /** `<planId>#<taskId>`, for the byTask index; only on task events. */
  readonly planTask?: string;
  /** The previous event's hash (GENESIS_HASH for the first). */
  readonly prevHash: string;
  /** SHA-256 of the canonical JSON of every other field. */
  readonly hash: string;
}

/** prevHash of an execution's first event. */
export const GENESIS_HASH = '0'.repeat(64);
