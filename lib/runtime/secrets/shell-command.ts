/**
 * Values reach shell text as data, never as code. Each plan reference in a command is replaced by
 * a reference to an environment variable `PLANGATE_VALUE_n` that holds its value: `${PLANGATE_VALUE_n}`
 * inside double quotes, `"${PLANGATE_VALUE_n}"` (one word, never split or globbed) elsewhere
 * (lib/plan/shell/references.ts says where each may stand). bash expands the variable; it never
 * parses the value. A reference anywhere else is refused: nothing is ever pasted into the text.
 *
 * `fillShellCommand` is pure and deterministic (an auditor recomputes it from the approved command
 * and the recorded values); `resolveShellCommand` looks the values up first.
 */
import {
  escapeDoubleQuoted,
  placeShellReferences,
  type ShellReferencePlace,
} from '../../plan/shell/index.ts';
import type { CallValue } from '../payloads/index.ts';
import { InvalidInputError } from '../shared/errors.ts';
import { type ReferenceScope, resolveReference } from './references.ts';

/** The variable that carries the n-th distinct reference of a command (1-based, in the order written). */
export const VALUE_ENV_PREFIX = 'PLANGATE_VALUE_';

export interface FilledShellCommand {
  /** The text bash runs: the command with each reference replaced by its variable. */
  readonly command: string;
  /** The variables holding the values, by name; merged last into the command's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** Each distinct reference with its value and variable, in the order written (unredacted). */
  readonly values: readonly CallValue[];
  /**
   * The command as a person (and the platform's policy) reads it: each value written in its
   * place, escaped so the shell would read it as the literal it is. Never run (unredacted).
   */
  readonly shown: string;
}

/**
 * The command bash runs and the environment it needs, from `values` (each reference as written →
 * its value as text). Throws InvalidInputError, located (`location`, line:column in the command),
 * for a reference in a place where it would be read as code, a reference with no value, or a value
 * holding a NUL byte (no environment variable can carry it).
 */
export function fillShellCommand(
  command: string,
  values: ReadonlyMap<string, string>,
  location = 'command',
): FilledShellCommand {
  return fillPlaces(command, placesOf(command, location), values, location);
}

/** Resolves the command's references in `scope` (non-strings become JSON text), then fills them in. */
export async function resolveShellCommand(
  command: string,
  scope: ReferenceScope,
  location = 'command',
): Promise<FilledShellCommand> {
  const places = placesOf(command, location);
  const values = new Map<string, string>();
  for (const { raw } of places)
    if (!values.has(raw)) values.set(raw, valueText(await resolveReference(raw, scope, location)));
  return fillPlaces(command, places, values, location);
}

/** A value as the text a command receives: strings as they are, anything else as JSON. */
export function valueText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

/** The places of the command's references; throws for the first refused one. */
function placesOf(command: string, location: string): readonly ShellReferencePlace[] {
  const places = placeShellReferences(command);
  const refused = places.find((place) => place.refused !== undefined);
  if (refused)
    throw new InvalidInputError(
      `${refused.raw} ${refused.refused} (at ${refused.line}:${refused.column} of the command)`,
      { location },
    );
  return places;
}

function fillPlaces(
  command: string,
  places: readonly ShellReferencePlace[],
  values: ReadonlyMap<string, string>,
  location: string,
): FilledShellCommand {
  const names = new Map<string, string>();
  const env: Record<string, string> = {};
  const recorded: CallValue[] = [];
  for (const place of places) {
    if (names.has(place.raw)) continue;
    const value = values.get(place.raw);
    if (value === undefined)
      throw new InvalidInputError(
        `${place.raw} has no value (at ${place.line}:${place.column} of the command)`,
        {
          location,
        },
      );
    if (value.includes('\0'))
      throw new InvalidInputError(
        `${place.raw} has a value with a NUL byte, which no environment variable can carry (at ${place.line}:${place.column} of the command)`,
        { location },
      );
    const name = `${VALUE_ENV_PREFIX}${names.size + 1}`;
    names.set(place.raw, name);
    env[name] = value;
    recorded.push({ ref: place.raw, value, env: name });
  }
  let filled = '';
  let shown = '';
  let last = 0;
  for (const place of places) {
    const name = names.get(place.raw) as string;
    const value = env[name] as string;
    const before = command.slice(last, place.start);
    filled += before + (place.placement === 'quoted' ? `\${${name}}` : `"\${${name}}"`);
    shown += before + (place.placement === 'quoted' ? escapeDoubleQuoted(value) : escapeWord(value));
    last = place.end;
  }
  const rest = command.slice(last);
  return { command: filled + rest, env, values: recorded, shown: shown + rest };
}

/**
 * An unquoted word: every character that is not plainly a word character is backslash-escaped (a
 * newline, which a backslash would remove, is quoted), so the word stays one literal; plain text
 * (a host, a path) stays as it is, as a person and a URL reader expect.
 */
function escapeWord(value: string): string {
  if (value === '') return "''";
  return value.replace(/[^A-Za-z0-9._\-/:@%+=,]/gu, (ch) => (ch === '\n' ? '"\n"' : `\\${ch}`));
}
