/** The `http` tool: one request with a timeout; status, a subset of headers and a bounded body. */
import { canonicalUrl } from '../../plan/hosts.ts';
import { InvalidInputError, TimeoutError, ToolFailedError } from '../shared/errors.ts';
import { DEFAULT_OUTPUT_LIMIT_BYTES, truncateText } from '../shared/truncate.ts';
import type { ToolContext, ToolOutput } from './types.ts';

export interface HttpInput {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** A string is sent as is; anything else is sent as JSON. */
  readonly body?: unknown;
  readonly timeoutSeconds?: number;
  /** Statuses that count as success. @default any 2xx/3xx */
  readonly expectStatus?: number | readonly number[];
  readonly maxBodyBytes?: number;
}

/** Response headers worth keeping as output; the rest (cookies, auth challenges) are dropped. */
const KEPT_HEADERS = ['content-type', 'content-length', 'location', 'etag', 'last-modified', 'retry-after'];

/** A response as the `http` tool and an http contract keep it: status, the kept headers, a bounded body. */
export interface BoundedHttpResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly json?: unknown;
  readonly bodyTruncated: boolean;
  readonly durationMs: number;
}

/**
 * Sends a request and reads a bounded body; throws TimeoutError on timeout and the fetch error on
 * connection failure. It sends to the URL in the canonical form the policy judged
 * (lib/plan/hosts.ts), never to a spelling fetch would read otherwise.
 */
export async function sendHttp(
  input: HttpInput,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<BoundedHttpResponse> {
  const started = performance.now();
  const url = canonicalUrl(input.url);
  if (!url) throw new InvalidInputError(`${input.method ?? 'GET'} ${input.url}: not a URL`);
  const timeout = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = { ...input.headers };
  let body: string | undefined;
  if (input.body !== undefined) {
    body = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
    if (
      typeof input.body !== 'string' &&
      !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
    ) {
      headers['content-type'] = 'application/json';
    }
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method: input.method ?? 'GET',
      headers,
      body,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      redirect: 'manual',
    });
  } catch (error) {
    if (timeout.aborted)
      throw new TimeoutError(`${input.method ?? 'GET'} ${input.url} timed out after ${timeoutMs} ms`);
    // undici wraps the socket error (ECONNRESET, ECONNREFUSED, ...) in `cause`; surface its code.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ToolFailedError(
      `${input.method ?? 'GET'} ${input.url} failed: ${cause?.message ?? String(error)}`,
      {
        ...(cause?.code ? { code: cause.code } : {}),
      },
    );
  }
  const text = await readBounded(response, input.maxBodyBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES);
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) kept[name] = value;
  }
  let json: unknown;
  if (!text.truncated && (response.headers.get('content-type') ?? '').includes('json')) {
    try {
      json = JSON.parse(text.text);
    } catch {
      // A body that claims JSON but is not stays available as text.
    }
  }
  return {
    status: response.status,
    headers: kept,
    body: text.text,
    ...(json !== undefined ? { json } : {}),
    bodyTruncated: text.truncated,
    durationMs: Math.round(performance.now() - started),
  };
}

async function readBounded(
  response: Response,
  maxBytes: number,
): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    // Stop reading a huge body early; one extra chunk past the limit is enough to mark the cut.
    if (size > maxBytes) {
      await reader.cancel();
      break;
    }
  }
  return truncateText(Buffer.concat(chunks).toString('utf8'), maxBytes);
}

/** The http step tool: fails (with the status, for the classifier) when the status is not expected. */
export async function runHttp(input: HttpInput, ctx: ToolContext): Promise<ToolOutput> {
  const timeoutMs = Math.min(
    input.timeoutSeconds ? input.timeoutSeconds * 1000 : ctx.timeoutMs,
    ctx.timeoutMs,
  );
  const result = await sendHttp(input, timeoutMs, ctx.signal);
  const expected = input.expectStatus === undefined ? undefined : [input.expectStatus].flat();
  const ok = expected ? expected.includes(result.status) : result.status >= 200 && result.status < 400;
  if (!ok) {
    throw new ToolFailedError(`${input.method ?? 'GET'} ${input.url} answered ${result.status}`, {
      httpStatus: result.status,
      output: result,
    });
  }
  return { ...result };
}
