/** A Markdown table cell: one line, pipes escaped, at most 200 characters. */
export function markdownCell(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim().replace(/\|/g, '\\|');
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
}
