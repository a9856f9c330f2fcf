/**
 * A gate as Slack Block Kit blocks: who may approve and the deadline (as fields), then one
 * section per step with its exact command, contract and rollback in code blocks, the
 * postconditions, the budget and the secret names. Slack's limits (50 blocks per message, 3000
 * characters per section text, 10 fields per section) are kept; what they cut is said plainly,
 * with a link to the page, and never mid-token: code is shortened before it is escaped.
 */
import {
  abortRollbackCall,
  abortRollbackPhrases,
  abortRollbacksText,
  approversText,
  budgetText,
  CONTEXT_TITLE,
  contextPhrases,
  filledValueText,
  isWarningPhrase,
  notShownText,
  omitted,
  quorumText,
  recoveryText,
  redactPlanText,
  revisionLine,
  riskPhrases,
  type ShownGate,
  suggestionText,
  supersededText,
} from '../gate/shown-gate.ts';
import { terminalSafe } from '../gate/view-text.ts';
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
 * The view's blocks, at most `maxBlocks` of them and about {@link SLACK_VIEW_CHARS} characters:
 * what does not fit is named in a last section that links to `link`.
 */
export function gateViewBlocks(gate: ShownGate, link: string, maxBlocks: number): Block[] {
  const redactor = new Redactor();
  // Control and bidirectional characters shown escaped, as on every channel.
  const plain = (value: string) => terminalSafe(redactPlanText(redactor, value));
  const text = (value: string) => escapeSlack(plain(value));
  const code = (value: string, limit: number) => slackCode(plain(value), limit);
  const blocks: Block[] = [
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
  if (gate.view) {
    const view = gate.view;
    let shown = 0;
    for (const [i, step] of view.steps.entries()) {
      const block = section(stepText(step, i + 1, text, code));
      if (!fits(block)) break;
      add(block);
      shown += 1;
    }
    const total = view.truncated?.total ?? view.steps.length;
    if (shown < total)
      cut.push(`${total - shown} of ${total} steps are not shown in Slack (its message limits).`);
    const facts = section(planFactsText(view, text, code));
    if (fits(facts)) add(facts);
    else cut.push('The postconditions, budget and secrets are not shown in Slack.');
    const { notShown } = omitted(view);
    if (notShown > 0 && shown === total) cut.push(text(notShownText(notShown, gate.plan)));
  }
  if (gate.stepGate) {
    for (const block of stepGateBlocks(gate.stepGate, text, code)) {
      if (fits(block)) add(block);
      else {
        cut.push('What already ran and the values the step consumes are not all shown in Slack.');
        break;
      }
    }
  }
  if (gate.abortRollsBack) {
    const lines = [
      `*${text(abortRollbacksText(gate.abortRollsBack))}*`,
      ...gate.abortRollsBack.map((r, i) =>
        [
          `${i + 1}. undo *${text(r.stepId)}* (${text(r.tool)})${r.call || r.filled ? `\n${code(abortRollbackCall(r).text, 500)}` : ''}`,
          ...abortRollbackPhrases(r).map((p) => `:warning: *${text(short(p, 500))}*`),
          ...(r.values ?? []).map((v) => `• ${text(short(filledValueText(v), 300))}`),
        ].join('\n'),
      ),
    ];
    const block = section(lines.join('\n'));
    if (fits(block)) add(block);
    else cut.push('The rollbacks an abort runs are not all shown in Slack.');
  }
  if (cut.length > 0)
    blocks.push(section(`:scissors: ${cut.join(' ')} <${link}|Open the page> to see everything.`));
  return blocks;
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
  code: (value: string, limit: number) => string,
): string {
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
    if (step.call) lines.push(...callText('Runs', step.call, text, code, codeLimit));
    else if (step.detailsOmitted) lines.push('_Command not shown here: see the page._');
    if (step.revised?.replaces) lines.push(...callText('Was', step.revised.replaces, text, code, codeLimit));
    if (step.contract) lines.push(...callText('Contract', step.contract, text, code, codeLimit));
    if (step.rollback) {
      lines.push(
        ...callText(`Rollback (${text(step.rollback.tool)})`, step.rollback.call, text, code, codeLimit),
      );
      if (step.rollback.contract)
        lines.push(...callText('Rollback contract', step.rollback.contract, text, code, codeLimit));
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
    if (codeLimit < 64) return `*${text(step.id)}*: too large for a Slack section; see the page.`;
  }
}

function callText(
  label: string,
  call: ShownCall,
  text: (value: string) => string,
  code: (value: string, limit: number) => string,
  codeLimit: number,
): string[] {
  const lines = [
    `${label} (${call.form}${call.expect ? `, passes on ${text(call.expect)}` : ''}):`,
    code(call.text, codeLimit),
  ];
  for (const detail of call.details ?? [])
    lines.push(
      detail.code || detail.value.includes('\n')
        ? `${text(detail.label)}: ${code(detail.value, codeLimit)}`
        : `${text(detail.label)}: ${text(short(detail.value, 300))}`,
    );
  for (const ref of call.references ?? [])
    lines.push(`${text(ref.raw)}: filled at run time from step ${text(ref.step)}`);
  return lines;
}

function planFactsText(
  view: ApprovalView,
  text: (value: string) => string,
  code: (value: string, limit: number) => string,
): string {
  for (let codeLimit = 1000; ; codeLimit = Math.floor(codeLimit / 2)) {
    const lines: string[] = [];
    if (view.postconditions.length > 0) {
      lines.push('*Postconditions* (checked after the run):');
      for (const post of view.postconditions) {
        lines.push(`• *${text(post.id)}*: ${text(short(post.description, 200))}`);
        if (post.risks.length > 0)
          lines.push(`:warning: *destructive check: ${text(post.risks.join('; '))}*`);
        if (post.contract) lines.push(...callText('Check', post.contract, text, code, codeLimit));
      }
    }
    if (view.budget) lines.push(`*Budget:* ${text(budgetText(view.budget))}`);
    lines.push(
      `*Secrets used (names only):* ${view.secrets.length > 0 ? text(view.secrets.join(', ')) : 'none'}`,
    );
    if (view.context) {
      lines.push(`*${text(CONTEXT_TITLE)}:*`);
      for (const entry of view.context) {
        lines.push(`• *${text(entry.key)}* = ${code(entry.value, codeLimit)}`);
        for (const phrase of contextPhrases(entry))
          lines.push(isWarningPhrase(phrase) ? `:warning: *${text(phrase)}*` : text(phrase));
      }
    }
    const out = lines.join('\n');
    if (out.length <= SLACK_LIMITS.sectionText || codeLimit < 32)
      return fitLines(out, SLACK_LIMITS.sectionText);
  }
}

function stepGateBlocks(
  stepGate: StepGateView,
  text: (value: string) => string,
  code: (value: string, limit: number) => string,
): Block[] {
  const blocks = [section(stepText(stepGate.step, undefined, text, code))];
  if (stepGate.consumes?.length)
    blocks.push(
      section(
        fitLines(
          [
            '*Values it will consume:*',
            ...stepGate.consumes.map(
              (v) => `• ${text(v.raw)} = ${v.value !== undefined ? code(v.value, 400) : '_not produced_'}`,
            ),
          ].join('\n'),
          SLACK_LIMITS.sectionText,
        ),
      ),
    );
  const done = stepGate.completed ?? [];
  blocks.push(
    section(
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
    ),
  );
  return blocks;
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
  const cut = value.length > limit ? '\n_(cut: the page shows it whole)_' : '';
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
