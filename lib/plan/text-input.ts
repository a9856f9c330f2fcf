/**
 * Turning a plan file's bytes into text, refusing what is not a plan: too large,
 * not UTF-8, or containing NUL bytes. Each refusal is located.
 */
import type { Problem } from './problems.ts';
import { LineIndex } from './source-map.ts';

/** @default 8 MiB: a 100,000-step plan fits; anything larger is refused before parsing. */
export const DEFAULT_MAX_PLAN_BYTES = 8 * 1024 * 1024;

export type DecodeResult = { readonly text: string } | { readonly problem: Problem };

export function decodePlanBytes(
  bytes: Uint8Array,
  file: string,
  maxBytes: number = DEFAULT_MAX_PLAN_BYTES,
): DecodeResult {
  if (bytes.length > maxBytes) {
    return {
      problem: {
        severity: 'error',
        code: 'file-too-large',
        message: `plan file is ${formatSize(bytes.length)}; plans are limited to ${formatSize(maxBytes)}`,
        location: { file },
      },
    };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const offset = firstInvalidUtf8(bytes);
    const position = byteOffsetPosition(bytes, offset);
    return {
      problem: {
        severity: 'error',
        code: 'invalid-utf8',
        message: `plan file is not valid UTF-8 (byte 0x${(bytes[offset] ?? 0).toString(16).padStart(2, '0')} at offset ${offset})`,
        location: { file, ...position },
      },
    };
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const nul = text.indexOf('\0');
  if (nul !== -1) {
    return {
      problem: {
        severity: 'error',
        code: 'nul-byte',
        message: 'plan file contains a NUL byte; plans are text',
        location: { file, ...new LineIndex(text).position(nul) },
      },
    };
  }
  return { text };
}

function formatSize(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB` : `${bytes} bytes`;
}

/** Offset of the first byte that does not start or continue a well-formed UTF-8 sequence. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] ?? 0;
    let need: number;
    let min: number;
    if (b < 0x80) {
      i += 1;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else return i;
    let code = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      code = (code << 6) | (c & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return i;
    i += need + 1;
  }
  return bytes.length;
}

/** Line and column (in characters of the valid prefix) of a byte offset. */
function byteOffsetPosition(bytes: Uint8Array, offset: number): { line: number; column: number } {
  const prefix = new TextDecoder('utf-8').decode(bytes.subarray(0, offset));
  const lineStart = prefix.lastIndexOf('\n') + 1;
  let line = 1;
  for (let i = prefix.indexOf('\n'); i !== -1; i = prefix.indexOf('\n', i + 1)) line++;
  return { line, column: prefix.length - lineStart + 1 };
}
