/**
 * Task tokens for `.waitForTaskToken` tasks: unguessable (256 random bits), and kept only as a
 * SHA-256 hash in the history so that a waiting token keeps working after a restart while the
 * token itself never lands on disk.
 */
import * as crypto from 'node:crypto';
import { SfnServiceError } from '../types.ts';
import { randomBase64url } from './random.ts';

/** A new task token. */
export function newTaskToken(): string {
  return `pgt1.${randomBase64url(32)}`;
}

/** What the history stores instead of the token. */
export function tokenHash(token: string): string {
  return sha256(token);
}

/** Node ≥ 20.12's one-shot `crypto.hash` skips the Hash object that createHash builds; older Nodes (a
 * named import would fail to link there) lack it. */
const sha256: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'base64url')
    : (text) => crypto.createHash('sha256').update(text).digest('base64url');

/** AWS's InvalidToken for anything that cannot be one of our tokens. */
export function assertTokenShape(token: unknown): asserts token is string {
  if (typeof token !== 'string' || token.length < 1 || token.length > 1024) {
    throw new SfnServiceError('InvalidToken', 'Invalid Token');
  }
  if (!/^pgt1\.[A-Za-z0-9_-]{43}$/.test(token)) {
    throw new SfnServiceError('InvalidToken', 'Invalid Token');
  }
}

/** The callback outcome of a waiting task. */
export type TokenOutcome =
  | { readonly kind: 'success'; readonly output: unknown }
  | { readonly kind: 'failure'; readonly error?: string; readonly cause?: string };

/** A task waiting for SendTaskSuccess/Failure/Heartbeat. */
export interface TokenWaiter {
  complete(outcome: TokenOutcome): void;
  heartbeat(): void;
  /**
   * After {@link complete}: whether the event recording the outcome is in the history and handed
   * to the log (false when not, or not known).
   */
  outcomeHandedToLog?(): boolean;
}

/** Waiting tasks by token hash; closed tokens are remembered so that late calls get TaskTimedOut. */
export class TaskTokenRegistry {
  private readonly waiting = new Map<string, TokenWaiter>();
  /**
   * The tokens this engine handed out whose tasks wait, by the token itself: SendTaskSuccess finds
   * them without hashing. Memory only; after a restart tokens are found by their hash.
   */
  private readonly waitingByToken = new Map<string, TokenWaiter>();
  private readonly closed = new Set<string>();

  /** Outcomes that arrived for a resuming task before it reached its waiting point again. */
  private readonly early = new Map<string, TokenOutcome | undefined>();

  /** A task waits on the token with this hash (`token`: when this engine handed it out). */
  register(hash: string, waiter: TokenWaiter, token?: string): void {
    this.waiting.set(hash, waiter);
    if (token !== undefined) this.waitingByToken.set(token, waiter);
    // outcomes wait here only while a restarted engine replays
    if (this.early.size === 0) return;
    const outcome = this.early.get(hash);
    this.early.delete(hash);
    if (outcome) waiter.complete(outcome);
  }

  /** A task that was waiting before a restart and will register again once replay reaches it. */
  expect(hash: string): void {
    if (!this.waiting.has(hash)) this.early.set(hash, undefined);
  }

  /** The task stopped waiting (completed, timed out, aborted). */
  close(hash: string, token?: string): void {
    if (token !== undefined) this.waitingByToken.delete(token);
    this.waiting.delete(hash);
    if (this.early.size > 0) this.early.delete(hash);
    this.closed.add(hash);
  }

  /** The waiter of a token; throws TaskDoesNotExist / TaskTimedOut as AWS does. */
  waiterFor(token: unknown): TokenWaiter {
    assertTokenShape(token);
    const handedOut = this.waitingByToken.get(token);
    if (handedOut) return handedOut;
    const hash = tokenHash(token);
    const waiter = this.waiting.get(hash);
    if (waiter) return waiter;
    if (this.early.has(hash)) {
      return {
        complete: (outcome) => {
          if (this.early.get(hash) === undefined) this.early.set(hash, outcome);
        },
        heartbeat: () => {},
      };
    }
    if (this.closed.has(hash)) throw new SfnServiceError('TaskTimedOut', 'Task Timed Out');
    throw new SfnServiceError('TaskDoesNotExist', 'Task does not exist anymore');
  }
}
