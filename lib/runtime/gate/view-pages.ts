/**
 * The approval page, page by page: a plan gate's steps split into pages of about
 * {@link PAGE_VIEW_BYTES} (every step whole on one page, however large its command), and the proof
 * of which pages a reader was shown. Each page served adds itself to a signed list of pages seen
 * (bound to the gate and the content digest), carried by the links between pages and by the
 * answer form; the page offers Approve once every page was shown, and the approvals API takes an
 * approval of a gate whose stored view hides a command only with a list that covers every page.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { ApprovalView } from '../payloads/index.ts';
import type { ShownGate } from './shown-gate.ts';

/** The view's JSON bytes a page holds before the next step starts a new page. */
export const PAGE_VIEW_BYTES = 48 * 1024;

/** The form field (and query parameter) carrying the pages seen. */
export const SEEN_FIELD = 'seen';
/** The query parameter naming the page to show (1-based). */
export const PAGE_PARAM = 'page';

/** The indices of the view's steps on each page, in order; one page (maybe empty) at least. */
export function viewPages(view: ApprovalView | undefined, limitBytes = PAGE_VIEW_BYTES): number[][] {
  const pages: number[][] = [[]];
  let bytes = 0;
  (view?.steps ?? []).forEach((step, i) => {
    const size = Buffer.byteLength(JSON.stringify(step));
    const current = pages.at(-1) as number[];
    if (current.length > 0 && bytes + size > limitBytes) {
      pages.push([i]);
      bytes = size;
    } else {
      current.push(i);
      bytes += size;
    }
  });
  return pages;
}

/** A gate's pages: a plan gate's steps split by {@link viewPages}; any other gate is one page. */
export function gatePages(gate: Pick<ShownGate, 'kind' | 'view'>): number[][] {
  return gate.kind === 'plan' ? viewPages(gate.view) : [[]];
}

/** What a list of pages seen is bound to: one gate, the content it shows. */
export interface SeenScope {
  readonly approvalId: string;
  readonly digest: string;
  /** How many pages that content has (so a list for another pagination never passes). */
  readonly pages: number;
}

/** Signs lists of pages seen with a key of their own, derived from the approval signing key. */
export class SeenPages {
  private readonly key: Buffer;

  constructor(signingKey: string | Buffer) {
    // Its own key: a list of pages can never pass for a link MAC or a session, nor the reverse.
    this.key = Buffer.from(
      hkdfSync('sha256', Buffer.from(signingKey), Buffer.alloc(0), 'plangate approval pages seen v1', 32),
    );
  }

  /** `1-2-5.<mac>`: the pages, sorted, and their MAC over the scope. */
  token(scope: SeenScope, seen: Iterable<number>): string {
    const list = [...new Set(seen)].filter((p) => p >= 1 && p <= scope.pages).sort((a, b) => a - b);
    return `${list.join('-')}.${this.mac(scope, list)}`;
  }

  /** The pages a token proves were shown, for this scope; empty when it is absent, forged or another scope's. */
  read(scope: SeenScope, token: string | undefined | null): Set<number> {
    const match = /^((?:\d{1,6}-)*\d{1,6})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '');
    if (!match) return new Set();
    const list = (match[1] as string).split('-').map(Number);
    const expected = Buffer.from(this.mac(scope, list));
    const given = Buffer.from(match[2] as string);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return new Set();
    return new Set(list);
  }

  /** Whether a token proves every page of the scope was shown. */
  coversAll(scope: SeenScope, token: string | undefined | null): boolean {
    const seen = this.read(scope, token);
    for (let page = 1; page <= scope.pages; page++) if (!seen.has(page)) return false;
    return true;
  }

  private mac(scope: SeenScope, list: readonly number[]): string {
    return createHmac('sha256', this.key)
      .update(JSON.stringify([scope.approvalId, scope.digest, scope.pages, list]))
      .digest('base64url');
  }
}
