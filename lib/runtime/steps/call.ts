/**
 * A step's or rollback's call as it will be made: the tool's args with every run-time value filled
 * in (a shell command's through its environment, never as text: secrets/shell-command.ts; a URL's
 * percent-encoded into its path segments and query values: secrets/url-binding.ts), and the
 * record TASK_STARTED / ROLLBACK_STARTED keep of it (`details.call`, payloads/call.ts).
 */
import { referencesInValue } from '../../plan/references.ts';
import type { Call, CallValue } from '../payloads/index.ts';
import { REDACTED, Redactor } from '../secrets/redact.ts';
import { type ReferenceScope, resolveReference, resolveReferences } from '../secrets/references.ts';
import { resolveShellCommand, valueText } from '../secrets/shell-command.ts';
import { resolveHttpRequest } from '../secrets/url-binding.ts';

/** The tool whose command is shell text. */
const SHELL = 'shell';
const HTTP = 'http';

export interface ResolvedCall {
  readonly tool: string;
  /** What the tool receives. */
  readonly args: Record<string, unknown>;
  /** Every run-time value the args hold, unredacted (the record redacts them). */
  readonly values: readonly CallValue[];
  /**
   * The args as a person reads the call: each value in its reference's place, a shell command's
   * too. What the platform's policy judges (the hosts it reaches, what it deletes; a shell step's
   * env values written in place of their variables: policy/entities.ts `callAsRun`); never run.
   */
  readonly judged: Record<string, unknown>;
}

/** Fills `template` (the approved args, revisions applied) for `tool`; throws, located, when a value cannot be placed or found. */
export async function resolveCall(
  tool: string,
  template: Readonly<Record<string, unknown>>,
  scope: ReferenceScope,
  location: string,
): Promise<ResolvedCall> {
  if (tool === SHELL && typeof template.command === 'string') {
    const { command, ...rest } = template;
    const filled = await resolveShellCommand(command, scope, `${location}.command`);
    const others = (await resolveReferences(rest, scope, location)) as Record<string, unknown>;
    const planEnv = (others.env ?? {}) as Record<string, unknown>;
    return {
      tool,
      // The values' variables last: nothing in the plan can override them.
      args: { ...others, command: filled.command, env: { ...planEnv, ...filled.env } },
      values: [...filled.values, ...(await valuesIn(rest, scope, location))],
      judged: { ...others, command: filled.shown },
    };
  }
  // A URL's values fill only its path segments and query values, percent-encoded (url-binding.ts).
  const args =
    tool === HTTP
      ? await resolveHttpRequest(template, scope, location)
      : ((await resolveReferences(template, scope, location)) as Record<string, unknown>);
  return { tool, args, values: await valuesIn(template, scope, location), judged: args };
}

/** The record of a call: secrets redacted (a secret's reference stays, its value never does). */
export function callRecord(call: ResolvedCall, secretValues: Iterable<string>): Call {
  const redactor = new Redactor(secretValues);
  const values = call.values.map((value) => ({
    ...value,
    value: value.ref.startsWith('${secrets.') ? REDACTED : redactor.text(value.value),
  }));
  const ran =
    call.tool === SHELL
      ? {
          command: redactor.text(String(call.args.command)),
          env: Object.keys((call.args.env ?? {}) as Record<string, unknown>),
          ...(typeof call.args.cwd === 'string' ? { cwd: redactor.text(call.args.cwd) } : {}),
        }
      : redactor.value(call.args);
  return { tool: call.tool, values, ran };
}

/** The distinct references in `value` (outside shell text) with their values. */
async function valuesIn(value: unknown, scope: ReferenceScope, location: string): Promise<CallValue[]> {
  const seen = new Set<string>();
  const values: CallValue[] = [];
  for (const ref of referencesInValue(value)) {
    if (ref.malformed || seen.has(ref.raw)) continue;
    seen.add(ref.raw);
    values.push({ ref: ref.raw, value: valueText(await resolveReference(ref.raw, scope, location)) });
  }
  return values;
}
