/**
 * A gate as Slack Block Kit blocks: who may approve and the deadline (as fields), then one
 * section per step with its exact command, contract and rollback in code blocks, the
 * postconditions, the budget and the secret names. Slack's limits (50 blocks per message, 3000
 * characters per section text, 10 fields per section) are kept; what they cut is said exactly
 * (which step, which part, how many characters), with a link to the page, and never mid-token:
 * code is shortened before it is escaped. Hidden characters are shown as symbols
 * (lib/plan/visible-text.ts) and the gate's warnings come first.
 */
import { visibleText } from '../../plan/visible-text.ts';
import {
  abortRollbackCall,
  abortRollbackPhrases,
  abortRollbacksText,
  agentFacts,
  approversText,
  budgetText,
  CONTEXT_TITLE,
  contextPhrases,
  contractRiskPhrases,
  effectPhrases,
  filledValueText,
  isWarningPhrase,
  omitted,
  quorumText,
  recoveryText,
  redactPlanText,
  revisionLine,
  riskPhrases,
  rollbackRiskPhrases,
  type ShownGate,
  suggestionText,
  supersededText,
} from '../gate/shown-gate.ts';
import type { ApprovalView, ShownCall, StepGateView, StepView } from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { escapeSlack, slackDate } from './slack-text.ts';

/** Slack's limits (https://api.slack.com/reference/block-kit/blocks). */
export const SLACK_LIMITS = { blocks: 50, sectionText: 3000, fields: 10, fieldText: 2000 } as const;

/**
 * Characters of view text per message: the message is stored with its gate (for updates) once
 * per reminder, and the gate item must stay far below DynamoDB's 400 KB.
 */
export const SLACK_VIEW_CHARS = 12_000;

type Block = Record<string, unknown>;

/**
 * Code shown in a block: `value` within `limit` characters; what was cut of it is noted under
 * `where` (a later, shorter attempt at the same block overwrites the note).
 */
type Code = ((value: string, limit: number, where: string) => string) & {
  readonly cuts: Map<string, string>;
};

/** The view in Slack: its blocks, and each thing Slack cut of it (empty: the message shows all the view shows). */
export interface SlackView {
  readonly blocks: Block[];
  readonly cut: readonly string[];
}

/**
 * The view's blocks, at most `maxBlocks` of them and about {@link SLACK_VIEW_CHARS} characters:
 * what does not fit is named, exactly, in a last section that links to `link`.
 */
export function gateViewBlocks(gate: ShownGate, link: string, maxBlocks: number): SlackView {
  const redactor = new Redactor();
  // Hidden characters shown as symbols, as on every channel.
  const plain = (value: string) => visibleText(redactPlanText(redactor, value));
  const text = (value: string) => escapeSlack(plain(value));
  const blocks: Block[] = [
    ...gate.warnings.map((warning) =>
      section(
        fitLines(
          [
            `:warning: *${escapeSlack(warning.title)}*`,
            ...warning.items.map((item) => `• ${text(item)}`),
          ].join('\n'),
          SLACK_LIMITS.sectionText,
        ),
      ),
    ),
    peopleBlock(gate, text),
    ...(gate.recovery
      ? [section(fitText(suggestionMrkdwn(gate.recovery, text), SLACK_LIMITS.sectionText))]
      : []),
  ];
  // Kept free for the closing section that says what was cut.
  const room = maxBlocks - 1;
  let chars = 0;
  const fits = (block: Block) => blocks.length < room && chars + sizeOf(block) <= SLACK_VIEW_CHARS;
  const add = (block: Block) => {
    chars += sizeOf(block);
    blocks.push(block);
  };
  const cut: string[] = [];
  /** Renders with a fresh list of cuts, kept only when the block is added. */
  const rendered = (render: (code: Code) => string): { block: Block; cuts: string[] } => {
    const cuts = new Map<string, string>();
    const code: Code = Object.assign(
      (value: string, limit: number, where: string) => {
        const shown = plain(value);
        if (shown.length > limit)
          cuts.set(where, `${where}: ${limit - 1} of ${shown.length} characters shown`);
        else cuts.delete(where);
        return slackCode(shown, limit);
      },
      { cuts },
    );
    const block = section(render(code));
    return { block, cuts: [...cuts.values()] };
  };
  const tryAdd = (render: (code: Code) => string): boolean => {
    const { block, cuts } = rendered(render);
    if (!fits(block)) return false;
    add(block);
    cut.push(...cuts);
    return true;
  };
  if (gate.view) {
    const view = gate.view;
    let shown = 0;
    for (const [i, step] of view.steps.entries()) {
      if (!tryAdd((code) => stepText(step, i + 1, text, code))) break;
      shown += 1;
    }
    const { notListed } = omitted(view);
    const unshown = view.steps.slice(shown).map((step) => step.id);
    if (unshown.length > 0)
      cut.push(
        `step${unshown.length === 1 ? '' : 's'} ${listed(unshown)} (${unshown.length} of ${view.steps.length}) not shown (Slack's message limits)`,
      );
    if (notListed > 0) cut.push(`${notListed} more steps not listed`);
    if (!tryAdd((code) => planFactsText(view, text, code)))
      cut.push('the postconditions, budget, secrets and context not shown');
  }
  if (gate.stepGate) {
    for (const render of stepGateBlocks(gate.stepGate, text)) {
      if (!tryAdd(render)) {
        cut.push('what already ran and the values the step consumes not all shown');
        break;
      }
    }
  }
  if (gate.abortRollsBack) {
    const rollbacks = gate.abortRollsBack;
    const shown = tryAdd((code) =>
      [
        `*${text(abortRollbacksText(rollbacks))}*`,
        ...rollbacks.map((r, i) =>
          [
            `${i + 1}. undo *${text(r.stepId)}* (${text(r.tool)})${r.call || r.filled ? `\n${code(abortRollbackCall(r).text, 500, `undo ${r.stepId}`)}` : ''}`,
            ...abortRollbackPhrases(r).map((p) => `:warning: *${text(short(p, 500))}*`),
            ...(r.values ?? []).map((v) => `• ${text(short(filledValueText(v), 300))}`),
          ].join('\n'),
        ),
      ].join('\n'),
    );
    if (!shown) cut.push('the rollbacks an abort runs not shown');
  }
  if (cut.length > 0)
    blocks.push(
      section(
        fitLines(
          `:scissors: *Slack cut this message:* ${text(cut.join('; '))}. <${link}|Open the page>: it shows every command in full. Approve there.`,
          SLACK_LIMITS.sectionText,
        ),
      ),
    );
  return { blocks, cut };
}

/** Ids as "a, b, c" (the first ten, then how many more). */
function listed(ids: readonly string[]): string {
  return ids.length > 10 ? `${ids.slice(0, 10).join(', ')} and ${ids.length - 10} more` : ids.join(', ');
}

/** The model's suggestion, beside the buttons: what it suggests, why, what changes, what accepting does. */
function suggestionMrkdwn(
  advice: NonNullable<ShownGate['recovery']>,
  text: (value: string) => string,
): string {
  const shown = suggestionText(advice);
  return [
    `:bulb: *${text(shown.headline)}*`,
    `*Why:* ${text(short(shown.reasons, 1500))}`,
    ...shown.changes.map((change) => `*Change:* ${text(short(change, 500))}`),
    `_${text(shown.accepting)}; accept it on the page._`,
  ].join('\n');
}

/** Who may approve, the votes, the deadline (each reader's local time, UTC beside it), as fields. */
function peopleBlock(gate: ShownGate, text: (value: string) => string): Block {
  const fields: [string, string][] = [];
  if (gate.supersededBy !== undefined)
    fields.push([
      'Superseded',
      `by ${text(supersededText(gate.supersededBy))}: it can no longer be approved`,
    ]);
  if (gate.submittedBy !== undefined) fields.push(['Submitted by', text(short(gate.submittedBy, 500))]);
  if (gate.runsAs !== undefined) fields.push(['Runs as', text(short(gate.runsAs, 500))]);
  if (gate.kind === 'plan' || gate.kind === 'step')
    fields.push(
      ['May approve', text(short(approversText(gate), 1500))],
      ['Approvals', text(short(quorumText(gate), 1500))],
    );
  if (gate.revision) fields.push(['Modified', revisionLine(gate.revision)]);
  const at = new Date(gate.expiresAt);
  fields.push([
    'Answer by',
    Number.isNaN(at.getTime())
      ? text(gate.expiresAt)
      : `${slackDate(at).replace(/^at /, '')} (${at.toISOString().slice(11, 16)} UTC)`,
  ]);
  return {
    type: 'section',
    fields: fields.slice(0, SLACK_LIMITS.fields).map(([label, value]) => ({
      type: 'mrkdwn',
      text: fitText(`*${label}:*\n${value}`, SLACK_LIMITS.fieldText),
    })),
  };
}

/**
 * A step as one section's mrkdwn, within 3000 characters: code blocks are shortened (before
 * escaping) until it fits, and the section then says it was cut.
 */
function stepText(
  step: StepView,
  number: number | undefined,
  text: (value: string) => string,
  code: Code,
): string {
  const at = `step ${step.id}`;
  for (let codeLimit: number = SLACK_LIMITS.sectionText; ; codeLimit = Math.floor(codeLimit / 2)) {
    const lines: string[] = [];
    const tool = step.target !== undefined ? `agent ${text(step.target)}` : text(step.tool);
    const flags = [
      ...(step.requiresApproval ? ['requires approval'] : []),
      ...(step.requiresHuman ? ['done by a person'] : []),
      ...(step.critical ? [] : ['not critical']),
    ];
    lines.push(
      `*${number !== undefined ? `${number}. ` : ''}${text(step.id)}*: ${text(short(step.description, 300))}`,
      `via ${tool}${flags.length > 0 ? ` · ${flags.join(' · ')}` : ''}`,
    );
    for (const phrase of riskPhrases(step))
      lines.push(isWarningPhrase(phrase) ? `:warning: *${text(phrase)}*` : text(phrase));
    const call = (label: string, shown: ShownCall, where: string) =>
      lines.push(...callText(label, shown, text, code, codeLimit, `${at} ${where}`));
    if (step.call) call('Runs', step.call, 'runs');
    else if (step.detailsOmitted) lines.push('_Command not shown: too large for this gate._');
    for (const fact of step.agent ? agentFacts(step.agent) : [])
      lines.push(
        fact.code
          ? `${text(fact.label)}: ${code(fact.value, codeLimit, `${at} ${fact.label}`)}`
          : `${text(fact.label)}: ${text(fact.value)}`,
      );
    if (step.revised?.replaces) call('Was', step.revised.replaces, 'was');
    if (step.contract) {
      call('Contract', step.contract, 'contract');
      for (const phrase of contractRiskPhrases(step)) lines.push(`:warning: *${text(phrase)}*`);
    }
    if (step.rollback) {
      call(`Rollback (${text(step.rollback.tool)})`, step.rollback.call, 'rollback');
      for (const phrase of rollbackRiskPhrases(step)) lines.push(`:warning: *${text(phrase)}*`);
      if (step.rollback.contract) call('Rollback contract', step.rollback.contract, 'rollback contract');
    }
    const meta = [
      ...(step.timeoutSeconds !== undefined ? [`step timeout ${step.timeoutSeconds} s`] : []),
      ...(step.recovery ? [recoveryText(step.recovery)] : []),
      ...(step.dependsOn.length > 0 ? [`after ${step.dependsOn.join(', ')}`] : []),
      ...(step.outputs.length > 0 ? [`outputs ${step.outputs.join(', ')}`] : []),
    ];
    if (meta.length > 0) lines.push(text(meta.join(' · ')));
    const out = lines.join('\n');
    if (out.length <= SLACK_LIMITS.sectionText) return out;
    if (codeLimit < 64) {
      code.cuts.clear();
      code.cuts.set(at, `${at}: not shown (too large for a Slack section)`);
      return `*${text(step.id)}*: too large for a Slack section; see the page.`;
    }
  }
}

function callText(
  label: string,
  call: ShownCall,
  text: (value: string) => string,
  code: Code,
  codeLimit: number,
  where: string,
): string[] {
  const lines = [
    `${label} (${call.form}${call.expect ? `, passes on ${text(call.expect)}` : ''}):`,
    code(call.text, codeLimit, where),
  ];
  // Every detail as code: a shortened one is noted like the call's text.
  for (const detail of call.details ?? [])
    lines.push(
      `${text(detail.label)}: ${code(detail.value, Math.min(codeLimit, 1000), `${where}, ${detail.label}`)}`,
    );
  for (const ref of call.references ?? [])
    lines.push(`${text(ref.raw)}: filled at run time from step ${text(ref.step)}`);
  return lines;
}

function planFactsText(view: ApprovalView, text: (value: string) => string, code: Code): string {
  for (let codeLimit = 1000; ; codeLimit = Math.floor(codeLimit / 2)) {
    const lines: string[] = [];
    if (view.postconditions.length > 0) {
      lines.push('*Postconditions* (checked after the run):');
      for (const post of view.postconditions) {
        lines.push(`• *${text(post.id)}*: ${text(short(post.description, 200))}`);
        if (post.risks.length > 0)
          lines.push(`:warning: *destructive check: ${text(post.risks.join('; '))}*`);
        for (const phrase of effectPhrases(post)) lines.push(`:warning: *check: ${text(phrase)}*`);
        if (post.contract)
          lines.push(
            ...callText('Check', post.contract, text, code, codeLimit, `postcondition ${post.id} check`),
          );
      }
    }
    if (view.budget) lines.push(`*Budget:* ${text(budgetText(view.budget))}`);
    lines.push(
      `*Secrets used (names only):* ${view.secrets.length > 0 ? text(view.secrets.join(', ')) : 'none'}`,
    );
    if (view.context) {
      lines.push(`*${text(CONTEXT_TITLE)}:*`);
      for (const entry of view.context) {
        lines.push(`• *${text(entry.key)}* = ${code(entry.value, codeLimit, `context.${entry.key}`)}`);
        for (const phrase of contextPhrases(entry))
          lines.push(isWarningPhrase(phrase) ? `:warning: *${text(phrase)}*` : text(phrase));
      }
    }
    const out = lines.join('\n');
    if (out.length <= SLACK_LIMITS.sectionText || codeLimit < 32)
      return fitCounted(out, code, 'the postconditions, budget, secrets and context');
  }
}

/** A step gate's sections, each rendered with its own record of cuts. */
function stepGateBlocks(stepGate: StepGateView, text: (value: string) => string): ((code: Code) => string)[] {
  const renders: ((code: Code) => string)[] = [(code) => stepText(stepGate.step, undefined, text, code)];
  const consumes = stepGate.consumes ?? [];
  if (consumes.length > 0)
    renders.push((code) =>
      fitCounted(
        [
          '*Values it will consume:*',
          ...consumes.map(
            (v) =>
              `• ${text(v.raw)} = ${v.value !== undefined ? code(v.value, 400, `value ${v.raw}`) : '_not produced_'}`,
          ),
        ].join('\n'),
        code,
        'the values it will consume',
      ),
    );
  const done = stepGate.completed ?? [];
  renders.push(() =>
    fitLines(
      [
        '*Already done:*',
        ...(done.length === 0 ? ['nothing yet'] : []),
        ...(stepGate.completedNotListed ? [`… ${stepGate.completedNotListed} earlier steps`] : []),
        ...done.map(
          (d) =>
            `• ${text(d.id)}: ${d.evidence ? `${d.evidence.passed ? 'passed' : '*FAILED*'} ${text(d.evidence.kind)} contract: ${text(short(d.evidence.summary, 200))}` : 'no contract'}`,
        ),
      ].join('\n'),
      SLACK_LIMITS.sectionText,
    ),
  );
  return renders;
}

/** {@link fitLines}, noting under `where` how many lines it kept when it cut. */
function fitCounted(text: string, code: Code, where: string): string {
  const out = fitLines(text, SLACK_LIMITS.sectionText);
  if (out !== text)
    code.cuts.set(where, `${where}: ${out.split('\n').length - 1} of ${text.split('\n').length} lines shown`);
  return out;
}

function section(mrkdwn: string): Block {
  return { type: 'section', text: { type: 'mrkdwn', text: mrkdwn } };
}

/**
 * `value` as a Slack code block: shortened to `limit` characters first (so no entity or mark is
 * cut), then `&`, `<`, `>` escaped and any run of three backticks broken (it would end the block).
 */
export function slackCode(value: string, limit: number): string {
  const shortened = value.length > limit ? `${value.slice(0, Math.max(0, limit - 1))}…` : value;
  const escaped = shortened
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/```/g, '`\u200b`\u200b`');
  const cut = value.length > limit ? `\n_(cut here: ${limit - 1} of ${value.length} characters shown)_` : '';
  return `\`\`\`${escaped}\`\`\`${cut}`;
}

/** Whole lines of `text` within `limit` characters, and a last line saying the rest is on the page. */
function fitLines(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const tail = '\n_… more on the page_';
  const kept: string[] = [];
  let length = 0;
  // Room to close a code block the cut leaves open.
  const close = '```';
  for (const line of text.split('\n')) {
    if (length + line.length + 1 + tail.length + close.length > limit) break;
    kept.push(line);
    length += line.length + 1;
  }
  const open = (kept.join('\n').match(/```/g) ?? []).length % 2 === 1;
  return `${kept.join('\n')}${open ? close : ''}${tail}`;
}

/** A field's text within `limit`, cut at a line, never inside one. */
function fitText(text: string, limit: number): string {
  return text.length <= limit ? text : fitLines(text, limit);
}

function short(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

function sizeOf(block: Block): number {
  return JSON.stringify(block).length;
}
