import { expect } from 'vitest';

/** An approval page opened from its link as a browser does: the redirect, its cookie, the form. */
export interface OpenedApprovalPage {
  /** The page's clean URL (`…/approvals/<handle>`). */
  readonly url: string;
  readonly html: string;
  /** Posts the page's form to its action (with its form token and the session cookie). */
  answer(fields: Record<string, string>): Promise<Response>;
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
    answer: (fields) =>
      fetch(action, {
        method: 'POST',
        headers: { cookie },
        body: new URLSearchParams({ ...fields, form_token: formToken }),
      }),
  };
}
