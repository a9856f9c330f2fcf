/** Text in Slack's mrkdwn: escaping plan-authored text, and dates each reader sees in their own time zone. */

/** Slack mrkdwn: `&`, `<` and `>` are control characters (links, mentions); formatting marks are neutralised. */
export function escapeSlack(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/([*_~`])/g, '\u200b$1\u200b');
}

/** "at <time>" that Slack shows in each reader's time zone, with the UTC time as its fallback. */
export function slackDate(at: Date): string {
  const iso = at.toISOString();
  return `at <!date^${Math.floor(at.getTime() / 1000)}^{date_short_pretty} {time_secs}|${iso}>`;
}
