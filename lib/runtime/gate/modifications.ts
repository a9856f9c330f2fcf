/**
 * Approving with modifications from the page, field by field instead of JSON: each step's
 * arguments as the gate's view shows them (the shell command in a text area, an HTTP request's
 * method and URL, an echo's message, … and, for any other tool, one field per argument: text
 * for a string, JSON for anything else), and a "skip this step" box (plan gate only). The form
 * posts every field as shown or edited; the decision names only what changed.
 */
import { canonicalJson } from '../../plan/digest.ts';
import { stepOutputReferences } from '../../plan/references.ts';
import type { ShownCall } from '../payloads/index.ts';

/** What the page knows of a step's call: the gate view's step (lib/runtime/payloads/gate.ts `StepView`). */
export interface EditableStep {
  readonly id: string;
  readonly tool: string;
  /** The call as the view shows it; absent when the view was cut to fit (nothing to edit then). */
  readonly call?: ShownCall;
}

/** One editable argument: its name in the tool's args, its value now, and how it is typed. */
export interface ArgField {
  readonly key: string;
  readonly value: unknown;
  /** `command`: a shell command (monospace text area); `text`: a string; `json`: any other value, as JSON. */
  readonly input: 'command' | 'text' | 'json';
}

/** The form field of one argument of one step. */
export function argFieldName(stepId: string, key: string): string {
  return `arg.${stepId}.${key}`;
}

/** The form field whose values are the steps ticked to skip. */
export const SKIP_FIELD = 'skipSteps';

/**
 * The arguments of `step` a person may change on the page. The view shows a built-in tool's main
 * argument as text (`form`), which is exactly its value; any other tool's args are shown as
 * canonical JSON (`json`), each argument then its own field. An agent's task is its contract's
 * business, not an argument: it is not offered.
 */
export function argFields(step: EditableStep): ArgField[] {
  const call = step.call;
  if (!call || step.tool === 'agent') return [];
  switch (call.form) {
    case 'command':
      return [{ key: 'command', value: call.text, input: 'command' }];
    case 'request': {
      const space = call.text.indexOf(' ');
      if (space < 1) return [];
      return [
        { key: 'method', value: call.text.slice(0, space), input: 'text' },
        { key: 'url', value: call.text.slice(space + 1), input: 'text' },
      ];
    }
    case 'message':
      return [{ key: 'message', value: call.text, input: 'text' }];
    case 'function':
      return [{ key: 'functionName', value: call.text, input: 'text' }];
    case 'json': {
      let args: unknown;
      try {
        args = JSON.parse(call.text);
      } catch {
        return [];
      }
      if (args === null || typeof args !== 'object' || Array.isArray(args)) return [];
      return Object.entries(args).map(([key, value]) => ({
        key,
        value,
        input: typeof value === 'string' ? 'text' : 'json',
      }));
    }
    default:
      return [];
  }
}

/**
 * The args `step` is called with, as far as its view shows them (one entry per {@link argFields}),
 * with `overrides` on top: what a revision will call the step's tool with.
 */
export function argsWithOverrides(
  step: EditableStep,
  overrides: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  return { ...Object.fromEntries(argFields(step).map((f) => [f.key, f.value])), ...overrides };
}

/**
 * The call `step` makes with `overrides` on top of its args, as its view would show it: the inverse
 * of {@link argFields} for the main text; the other details stay, but those overridden, which
 * show their new values.
 */
export function callWithOverrides(
  step: EditableStep,
  overrides: Readonly<Record<string, unknown>>,
): ShownCall {
  const args = argsWithOverrides(step, overrides);
  const text = (key: string) =>
    typeof args[key] === 'string' ? (args[key] as string) : canonicalJson(args[key]);
  const form = step.call?.form ?? 'json';
  let main: string;
  switch (form) {
    case 'command':
      main = text('command');
      break;
    case 'request':
      main = `${text('method')} ${text('url')}`;
      break;
    case 'message':
      main = text('message');
      break;
    case 'function':
      main = text('functionName');
      break;
    default:
      return withStepReferences({ form: 'json', text: canonicalJson(args) }, args);
  }
  const mainKeys = argFields(step).map((f) => f.key);
  const details = [
    ...(step.call?.details ?? []).filter((d) => !Object.hasOwn(overrides, d.label)),
    ...Object.entries(overrides)
      .filter(([key]) => !mainKeys.includes(key))
      .map(([label, value]) => ({
        label,
        value: typeof value === 'string' ? value : canonicalJson(value),
        code: true,
      })),
  ];
  const { details: _shown, ...shown } = step.call ?? { form };
  return withStepReferences({ ...shown, form, text: main, ...(details.length > 0 ? { details } : {}) }, [
    args,
    details,
  ]);
}

function withStepReferences(call: ShownCall, source: unknown): ShownCall {
  const { references: _old, ...rest } = call;
  const references = stepOutputReferences(source);
  return references.length > 0 ? { ...rest, references } : rest;
}

/** A field's value as the form shows it. */
export function fieldText(field: ArgField): string {
  return field.input === 'json' ? canonicalJson(field.value) : (field.value as string);
}

/** What a page's modification fields ask for, or the problems found in them (by field name). */
export type FormModifications =
  | {
      readonly argOverrides: Record<string, Record<string, unknown>>;
      readonly skipSteps: string[];
      /** Whether anything differs from the plan as shown. */
      readonly changed: boolean;
    }
  | { readonly problems: Readonly<Record<string, string>> };

/**
 * The modifications the fields of `form` make to `steps` (the steps the gate may change): each
 * argument whose field differs from its value now, and the steps ticked to skip. A field that is
 * missing counts as unchanged; a JSON field that is not JSON, or a skipped step the gate cannot
 * skip, is a problem.
 */
export function modificationsFromForm(
  form: URLSearchParams,
  steps: readonly EditableStep[],
  { canSkip }: { canSkip: boolean },
): FormModifications {
  const argOverrides: Record<string, Record<string, unknown>> = {};
  const problems: Record<string, string> = {};
  for (const step of steps) {
    for (const field of argFields(step)) {
      const name = argFieldName(step.id, field.key);
      const given = form.get(name);
      if (given === null) continue;
      // Browsers send a text area's line breaks as CRLF.
      const text = given.replace(/\r\n?/g, '\n');
      let value: unknown = text;
      if (field.input === 'json') {
        try {
          value = JSON.parse(text);
        } catch {
          problems[name] = `${field.key}: not JSON (a string in quotes, a number, true/false, [..] or {..})`;
          continue;
        }
        if (canonicalJson(value) === canonicalJson(field.value)) continue;
      } else if (text === field.value) continue;
      if (field.input === 'command' && text.trim() === '') {
        problems[name] = 'command: the command cannot be empty (tick "Skip this step" not to run it)';
        continue;
      }
      argOverrides[step.id] = { ...argOverrides[step.id], [field.key]: value };
    }
  }
  const known = new Set(steps.map((s) => s.id));
  const skipSteps = [...new Set(form.getAll(SKIP_FIELD))];
  const unknown = skipSteps.find((id) => !canSkip || !known.has(id));
  if (unknown !== undefined) problems[SKIP_FIELD] = `"${unknown}" is not a step this gate can skip`;
  if (Object.keys(problems).length > 0) return { problems };
  return {
    argOverrides,
    skipSteps,
    changed: skipSteps.length > 0 || Object.keys(argOverrides).length > 0,
  };
}

/**
 * A refused modification's problems (modification-check.ts, each at a JSON pointer into the
 * answer) by the page's field names, so each is shown beside its field: an argument's own field,
 * else its step's first field (a problem of the step's whole call), the skip boxes for
 * `/skipSteps`. Several problems of one field are shown together.
 */
export function formProblemsOf(
  problems: readonly { readonly pointer: string; readonly message: string }[],
  steps: readonly EditableStep[],
): Record<string, string> {
  const byField: Record<string, string> = {};
  for (const problem of problems) {
    const [section, stepId, key] = problem.pointer.split('/').slice(1);
    const fields = steps.find((s) => s.id === stepId);
    const keys = fields ? argFields(fields).map((f) => f.key) : [];
    const firstKey = keys[0];
    const name =
      section === 'argOverrides' && stepId !== undefined
        ? key !== undefined && keys.includes(key)
          ? argFieldName(stepId, key)
          : firstKey !== undefined
            ? argFieldName(stepId, firstKey)
            : 'decision'
        : section === 'skipSteps'
          ? SKIP_FIELD
          : 'decision';
    const where =
      key !== undefined && !keys.includes(key) ? `${problem.pointer.split('/').slice(3).join('.')}: ` : '';
    byField[name] = byField[name]
      ? `${byField[name]}; ${where}${problem.message}`
      : `${where}${problem.message}`;
  }
  return byField;
}
