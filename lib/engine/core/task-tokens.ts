/**
 * Task tokens for `.waitForTaskToken` tasks: unguessable (256 random bits), and kept only as a
 * SHA-256 hash in the history so that a waiting token keeps working after a restart while the
 * token itself never lands on disk.
 */
import * as crypto from 'node:crypto';
import { SfnServiceError } from '../types.ts';
import type { RandomPool } from './random.ts';

/** A new task token, from the engine's random bytes. */
export function newTaskToken(random: RandomPool): string {
  return `pgt1.${random.base64url(32)}`;
}

/** What the history stores instead of the token. */
export function tokenHash(token: string): string {
  return sha256(token);
}

/**
 * The internal member `{ tokenHash }` of the event that hands `token` out. In memory it is hashed
 * when first read: that engine looks its own tokens up by the token itself and usually never needs
 * the hash. A store encodes it anyway (before the token is handed out), and a plain member
 * serializes faster.
 */
export function tokenHashMember(token: string, memoryOnly: boolean): Record<string, unknown> {
  return memoryOnly ? new LazyTokenHash(token) : { tokenHash: sha256(token) };
}

/** `{ tokenHash }` hashed when first read (a class: an object literal with a getter costs more to build). */
class LazyTokenHash {
  [member: string]: unknown;
  #token: string;
  #hash: string | undefined;

  constructor(token: string) {
    this.#token = token;
  }

  get tokenHash(): string {
    this.#hash ??= sha256(this.#token);
    return this.#hash;
  }

  toJSON(): { tokenHash: string } {
    return { tokenHash: this.tokenHash };
  }
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

/**
 * Waiting tasks: by the token itself when this engine handed it out, else (tokens handed out before
 * a restart) by its hash; closed tokens are remembered the same way so that late calls get
 * TaskTimedOut.
 */
export class TaskTokenRegistry {
  /** Tasks waiting on tokens handed out before a restart (or before a redrive replayed their task), by token hash. */
  private readonly waiting = new Map<string, TokenWaiter>();
  /**
   * Tasks waiting on tokens this engine handed out, by the token itself: neither registering nor
   * SendTaskSuccess hashes them. Memory only (the store keeps the hash).
   */
  private readonly waitingByToken = new Map<string, TokenWaiter>();
  /** Hashes of closed tokens that were waited on by their hash. */
  private readonly closed = new Set<string>();
  /** Closed tokens this engine handed out. */
  private readonly closedTokens = new Set<string>();

  /** Outcomes that arrived for a resuming task before it reached its waiting point again. */
  private readonly early = new Map<string, TokenOutcome | undefined>();

  /** A task waits on a token this engine handed out. */
  registerToken(token: string, waiter: TokenWaiter): void {
    this.waitingByToken.set(token, waiter);
  }

  /** A task waits on the token with this hash, handed out before a restart or a redrive. */
  register(hash: string, waiter: TokenWaiter): void {
    this.waiting.set(hash, waiter);
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

  /** The task waiting on a token this engine handed out stopped waiting (completed, timed out, aborted). */
  closeToken(token: string): void {
    this.waitingByToken.delete(token);
    this.closedTokens.add(token);
  }

  /** The task waiting on the token with this hash stopped waiting (or never will: its attempt was interrupted). */
  close(hash: string): void {
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
    // a token this engine handed out may wait again by its hash: a redrive replays its task
    if (this.closedTokens.has(token) || this.closed.has(hash))
      throw new SfnServiceError('TaskTimedOut', 'Task Timed Out');
    throw new SfnServiceError('TaskDoesNotExist', 'Task does not exist anymore');
  }
}
