/** Parses a definition's JSON text; a syntax error is reported with its line and column. */
export type ParsedJson = { ok: true; value: unknown } | { ok: false; message: string };

export function parseJsonText(text: string): ParsedJson {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const match = /at position (\d+)/.exec(reason);
    const offset = match ? Number(match[1]) : text.length;
    const { line, column } = lineAndColumn(text, offset);
    const detail = reason.replace(/ in JSON at position \d+.*$/, '').replace(/ at position \d+.*$/, '');
    return { ok: false, message: `Invalid JSON at line ${line}, column ${column}: ${detail}` };
  }
}

/** 1-based line and column of a character offset. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}
