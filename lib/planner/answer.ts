/**
 * A model's answer, read as untrusted input: structured output is used as it is; text is read
 * leniently (a fenced ```json or ```yaml block, else the whole text) by lib/plan's own parser, so
 * size limits, NUL bytes, `__proto__` keys and bad nesting become located problems, never a crash.
 */
import { parsePlanText } from '../plan/parse.ts';
import type { Problem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import type { Proposal } from './provider.ts';

/** Longest answer read; a longer one is a problem for the model, not a parse. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

export interface ReadAnswer {
  readonly plan?: Plan;
  readonly problems: readonly Problem[];
}

const answerProblem = (code: string, message: string): Problem => ({
  severity: 'error',
  code,
  message,
  location: { file: 'answer', pointer: '' },
});

export function readAnswer(proposal: Proposal): ReadAnswer {
  let text: string;
  let format: 'json' | 'yaml';
  if (proposal.structured !== undefined && proposal.structured !== null) {
    text = JSON.stringify(proposal.structured) ?? '';
    format = 'json';
  } else if (proposal.text !== undefined) {
    const fenced = /```(json|ya?ml)?[^\n]*\n([\s\S]*?)```/i.exec(proposal.text);
    text = fenced ? (fenced[2] as string) : proposal.text.trim();
    format =
      fenced?.[1]?.toLowerCase().startsWith('y') || (!fenced && !text.startsWith('{')) ? 'yaml' : 'json';
  } else {
    return {
      problems: [
        answerProblem('empty-answer', 'the answer held no plan: answer with the plan as one JSON document'),
      ],
    };
  }
  if (Buffer.byteLength(text) > MAX_ANSWER_BYTES)
    return {
      problems: [
        answerProblem(
          'answer-too-large',
          `the answer is ${Buffer.byteLength(text)} bytes; a plan must fit in ${MAX_ANSWER_BYTES}`,
        ),
      ],
    };
  const parsed = parsePlanText(text, { filename: 'answer', format });
  return { plan: parsed.plan, problems: parsed.problems };
}
