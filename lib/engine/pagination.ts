/** The List* operations' pages: `maxResults` as AWS bounds it, and `nextToken` as an opaque position. */
import { SfnServiceError } from './types.ts';

/** The page size AWS takes from `maxResults`: 100 when absent or 0, at most 1000. */
export function pageSize(maxResults: number | undefined): number {
  return Math.min(Math.max(maxResults || 100, 1), 1000);
}

/** The token that continues a listing at `index`. */
export function encodePageToken(index: number): string {
  return Buffer.from(`pg:${index}`).toString('base64url');
}

/** Where a listing continues; AWS's InvalidToken for anything this engine did not hand out. */
export function decodePageToken(token: string): number {
  const m = /^pg:(\d{1,9})$/.exec(Buffer.from(token, 'base64url').toString());
  if (!m) throw new SfnServiceError('InvalidToken', 'Invalid pagination token');
  return Number(m[1]);
}

/** One page of `all`, and the token of the next one when there is more. */
export function paginate<T>(
  all: readonly T[],
  maxResults: number | undefined,
  nextToken: string | undefined,
): { page: T[]; nextToken: string | undefined } {
  const start = nextToken === undefined ? 0 : decodePageToken(nextToken);
  const page = all.slice(start, start + pageSize(maxResults));
  const next = start + page.length;
  return { page, nextToken: next < all.length ? encodePageToken(next) : undefined };
}
