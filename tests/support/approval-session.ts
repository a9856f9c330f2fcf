import { expect } from 'vitest';

/** An approval page opened from its link as a browser does: the redirect, its cookie, the form. */
export interface OpenedApprovalPage {
  /** The page's clean URL (`…/approvals/<handle>`). */
  readonly url: string;
  readonly html: string;
  /** Posts the page's form to its action (with its form token and the session cookie). */
  answer(fields: Record<string, string>): Promise<Response>;
  /**
   * Reads the page's every page, following "Next page" as a reader does: each page's HTML, and
   * the signed list of pages seen the last one carries (its form's `seen` field).
   */
  readEveryPage(): Promise<{ readonly pages: readonly string[]; readonly seen: string }>;
}

/** An attribute value as the page escaped it, unescaped. */
function unescaped(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/**
 * Opens `link` without following redirects, checks that the link redeems into a session on a URL
 * that holds no part of the link id, and reads the page with the session's cookie.
 */
export async function openApprovalPage(link: string): Promise<OpenedApprovalPage> {
  const opened = await fetch(link, { redirect: 'manual' });
  expect(opened.status).toBe(303);
  const url = new URL(opened.headers.get('location') as string, link).href;
  const linkId = new URL(link).pathname.split('/').at(-1) as string;
  for (const part of linkId.split('.')) expect(url).not.toContain(part);
  const cookie = (opened.headers.get('set-cookie') as string).split(';')[0] as string;
  const page = await fetch(url, { headers: { cookie } });
  expect(page.status).toBe(200);
  const html = await page.text();
  const formToken = /name="form_token" value="([^"]+)"/.exec(html)?.[1] as string;
  expect(formToken).toBeTruthy();
  // Where the form posts: the page itself, or (a link bound to one person) its as-recipient route.
  const action = new URL(/<form [^>]*action="([^"]+)"/.exec(html)?.[1] ?? url, url).href;
  return {
    url,
    html,
    readEveryPage: async () => {
      const pages = [html];
      for (;;) {
        const next = /<a class="pg-next" href="([^"]+)"/.exec(pages.at(-1) as string)?.[1];
        if (!next) break;
        const response = await fetch(new URL(unescaped(next), url), { headers: { cookie } });
        expect(response.status).toBe(200);
        pages.push(await response.text());
      }
      const seen = unescaped(/name="seen" value="([^"]*)"/.exec(pages.at(-1) as string)?.[1] ?? '');
      return { pages, seen };
    },
    answer: (fields) =>
      fetch(action, {
        method: 'POST',
        headers: { cookie },
        body: new URLSearchParams({ ...fields, form_token: formToken }),
      }),
  };
}
