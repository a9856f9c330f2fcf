/**
 * A gate as HTML: each step as a card (`<article class="pg-step">`) with its exact command and
 * contract in `<pre><code>`, its risk marks, rollback, recovery and links; then the
 * postconditions, budget and secret names; for a step gate, what already ran and the values it
 * will consume. Used by the email's HTML part and by the approval page. Self-contained markup
 * with class names (no layout assumed, no script); {@link VIEW_STYLE} is a plain stylesheet for
 * hosts without their own. Every string is redacted of credential shapes, its hidden characters
 * shown as labelled symbols (lib/plan/visible-text.ts, each in a `pg-char` span) and HTML-escaped;
 * commands wrap inside their box, so nothing that runs is ever off-screen.
 */
import { visibleText } from '../../plan/visible-text.ts';
import {
  type AbortRollback,
  type AgentStepView,
  type ApprovalView,
  type ContextEntry,
  ownCallMarked,
  type ShownCall,
  type StepGateView,
  type StepView,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { escapeHtml } from '../shared/html.ts';
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
  type DeadlineOptions,
  deadlineText,
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
} from './shown-gate.ts';

/** A small stylesheet for the classes below (the email's; the page may use its own). */
export const VIEW_STYLE =
  '.pg-step{border:1px solid #ccc;border-radius:6px;padding:.5rem 1rem;margin:.75rem 0}' +
  '.pg-step.pg-risky,.pg-call.pg-risky{border-color:#b00020;border-width:2px}' +
  '.pg-call.pg-risky{border-style:solid;border-radius:4px;padding:0 .5rem}' +
  '.pg-step h3{font-size:1rem;margin:.25rem 0}.pg-risk{color:#b00020;font-weight:bold}' +
  // Commands wrap, however long their words: nothing that runs is off to the side of its box.
  'pre{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-all}' +
  '.pg-call pre,.pg-detail pre{background:#f4f4f4;padding:.5rem;margin:.25rem 0}' +
  '.pg-meta{color:#444;font-size:.9rem}.pg-omitted{font-weight:bold}' +
  '.pg-char{background:#fde7a9;color:#6a3d00;border-radius:3px;padding:0 .1em;font-weight:bold}' +
  '.pg-warning{border-left:5px solid #b00020;background:#fdecee;padding:.5rem 1rem;margin:.75rem 0;overflow-wrap:anywhere}.pg-warning h2{font-size:1rem;margin:0 0 .25rem}' +
  // Plan text and identities (an IAM ARN) may be one long word: wrap it rather than widen a phone's page.
  '.pg-people,.pg-steps,.pg-postconditions,.pg-plan-facts,.pg-step-gate,td{overflow-wrap:anywhere}';

type Clean = (text: string) => string;

/** Plan text for HTML: credential shapes redacted, hidden characters as marked symbols, then HTML-escaped. */
function cleaner(redactor: Redactor = new Redactor()): Clean {
  return (text) => visibleHtml(redactPlanText(redactor, text));
}

/** `text` HTML-escaped with its hidden characters as symbols, each in a `pg-char` span (every `⟨` opens one). */
export function visibleHtml(text: string): string {
  return escapeHtml(visibleText(text)).replace(/⟨[^⟨⟩]*⟩/g, '<span class="pg-char">$&</span>');
}

/** The gate's warnings (hidden characters, look-alike words, commands not shown), first on the page and in the email. */
export function gateWarningsHtml(gate: ShownGate): string {
  return gate.warnings
    .map(
      (warning) =>
        `<section class="pg-warning" role="alert" data-warning="${warning.kind}"><h2>${escapeHtml(warning.title)}</h2><ul>${warning.items.map((item) => `<li>${visibleHtml(item)}</li>`).join('')}</ul></section>`,
    )
    .join('\n');
}

/** Every step of the view as a card, in plan order, and what was left out (a plan gate). */
export function stepCardsHtml(view: ApprovalView, redactor?: Redactor): string {
  const clean = cleaner(redactor);
  const { notListed } = omitted(view);
  return [
    `<section class="pg-steps" aria-labelledby="pg-steps-title"><h2 id="pg-steps-title">Steps (${view.truncated?.total ?? view.steps.length})</h2>`,
    ...view.steps.map((step, i) => stepCard(step, i + 1, clean)),
    ...(notListed > 0 ? [`<p class="pg-omitted">… ${notListed} more steps are not listed here.</p>`] : []),
    '</section>',
  ].join('\n');
}

/** One step's card. */
export function stepCardHtml(step: StepView, number?: number, redactor?: Redactor): string {
  return stepCard(step, number, cleaner(redactor));
}

/** The postconditions, the budget, the secret names and, when commands were left out, the sentence saying so. */
export function planFactsHtml(view: ApprovalView, redactor?: Redactor): string {
  const clean = cleaner(redactor);
  const parts: string[] = [];
  if (view.postconditions.length > 0) {
    parts.push(
      '<section class="pg-postconditions"><h2>Postconditions (checked after the run)</h2>',
      ...view.postconditions.map((post) =>
        [
          `<article class="pg-postcondition${post.risks.length > 0 ? ' pg-risky' : ''}" id="postcondition-${clean(post.id)}">`,
          `<h3><code>${clean(post.id)}</code> ${clean(post.description)}</h3>`,
          ...(post.risks.length > 0
            ? [`<p class="pg-risk">Destructive check: ${clean(post.risks.join('; '))}</p>`]
            : []),
          ...effectPhrases(post).map((phrase) => `<p class="pg-risk">Check: ${clean(phrase)}</p>`),
          ...(post.contract ? [callHtml('Check', post.contract, clean)] : []),
          '</article>',
        ].join('\n'),
      ),
      '</section>',
    );
  }
  parts.push(
    '<dl class="pg-plan-facts">',
    ...(view.budget ? [`<dt>Budget</dt><dd>${clean(budgetText(view.budget))}</dd>`] : []),
    `<dt>Secrets used (names only)</dt><dd>${view.secrets.length > 0 ? view.secrets.map((s) => `<code>${clean(s)}</code>`).join(', ') : 'none'}</dd>`,
    '</dl>',
  );
  if (view.context) parts.push(contextHtml(view.context, clean));
  return parts.join('\n');
}

/** The plan's context: each key, its exact value, and its marks. */
function contextHtml(entries: readonly ContextEntry[], clean: Clean): string {
  return [
    `<section class="pg-context" aria-labelledby="pg-context-title"><h2 id="pg-context-title">${escapeHtml(CONTEXT_TITLE)}</h2><dl>`,
    ...entries.map((entry) => {
      const phrases = contextPhrases(entry);
      return [
        `<dt><code>${clean(entry.key)}</code></dt>`,
        `<dd${entry.outsideWorkspace ? ' class="pg-risky"' : ''}><pre><code>${clean(entry.value)}</code></pre>`,
        ...(phrases.length > 0
          ? [
              `<ul class="pg-risks">${phrases.map((p) => `<li${isWarningPhrase(p) ? ' class="pg-risk"' : ''}>${clean(p)}</li>`).join('')}</ul>`,
            ]
          : []),
        '</dd>',
      ].join('');
    }),
    '</dl></section>',
  ].join('\n');
}

/** Who submitted, who may approve, the votes so far and the deadline (in `options.timeZone`, UTC beside it). */
export function gatePeopleHtml(gate: ShownGate, options: DeadlineOptions = {}): string {
  const clean = cleaner();
  const rows: [string, string][] = [];
  if (gate.submittedBy !== undefined) rows.push(['Submitted by', clean(gate.submittedBy)]);
  if (gate.runsAs !== undefined) rows.push(['Runs as', clean(gate.runsAs)]);
  if (gate.kind === 'plan' || gate.kind === 'step')
    rows.push(['May approve', clean(approversText(gate))], ['Approvals', clean(quorumText(gate))]);
  if (gate.revision) rows.push(['Modified', escapeHtml(revisionLine(gate.revision))]);
  rows.push([
    'Answer by',
    `<time datetime="${escapeHtml(gate.expiresAt)}">${escapeHtml(deadlineText(gate.expiresAt, options))}</time>`,
  ]);
  return [
    ...(gate.supersededBy !== undefined
      ? [
          `<p class="pg-superseded" role="alert">Superseded by ${clean(supersededText(gate.supersededBy))}: this version can no longer be approved.</p>`,
        ]
      : []),
    `<dl class="pg-people">${rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${v}</dd>`).join('')}</dl>`,
    ...(gate.recovery ? [suggestionHtml(gate.recovery, clean)] : []),
  ].join('\n');
}

/** The model's suggestion, beside the person's choices (its text escaped and redacted like plan text). */
function suggestionHtml(advice: NonNullable<ShownGate['recovery']>, clean: Clean): string {
  const shown = suggestionText(advice);
  return [
    '<section class="pg-suggestion" aria-labelledby="pg-suggestion-title">',
    `<h2 id="pg-suggestion-title">${clean(shown.headline)}</h2>`,
    `<p><strong>Why:</strong> ${clean(shown.reasons)}</p>`,
    ...(shown.changes.length > 0
      ? [
          '<ul class="pg-suggested-changes">',
          ...shown.changes.map((change) => `<li><code>${clean(change)}</code></li>`),
          '</ul>',
        ]
      : []),
    `<p class="pg-meta">${clean(shown.accepting)}.</p>`,
    '</section>',
  ].join('\n');
}

/** What an escalation's ABORT undoes: the rollbacks it runs, in order, each with its call. */
export function abortRollbacksHtml(rollbacks: readonly AbortRollback[], redactor?: Redactor): string {
  const clean = cleaner(redactor);
  return [
    `<section class="pg-abort"><h2>If you abort</h2><p>${escapeHtml(abortRollbacksText(rollbacks))}</p>`,
    ...(rollbacks.length > 0
      ? [
          '<ol>',
          ...rollbacks.map((r) => {
            const label = `Undo <code>${clean(r.stepId)}</code> (${clean(r.tool)})`;
            const phrases = abortRollbackPhrases(r);
            return [
              `<li${phrases.length > 0 ? ' class="pg-risky"' : ''}>`,
              r.call || r.filled ? callHtml(label, abortRollbackCall(r), clean) : label,
              ...(phrases.length > 0
                ? [
                    `<ul class="pg-risks">${phrases.map((p) => `<li class="pg-risk">${clean(p)}</li>`).join('')}</ul>`,
                  ]
                : []),
              ...(r.values?.length
                ? [
                    `<ul class="pg-values">${r.values.map((v) => `<li><code>${clean(filledValueText(v))}</code></li>`).join('')}</ul>`,
                  ]
                : []),
              '</li>',
            ].join('\n');
          }),
          '</ol>',
        ]
      : []),
    '</section>',
  ].join('\n');
}

/** A step gate: the step's card, the values it will consume, and what already ran with its evidence. */
export function stepGateHtml(stepGate: StepGateView, redactor?: Redactor): string {
  const clean = cleaner(redactor);
  const parts = [
    '<section class="pg-step-gate"><h2>The step</h2>',
    stepCard(stepGate.step, undefined, clean),
  ];
  if (stepGate.step.detailsOmitted)
    parts.push(
      '<p class="pg-omitted">Its command is too large for this gate: <code>plangate render &lt;plan&gt; --format yaml</code> shows it.</p>',
    );
  if (stepGate.consumes?.length)
    parts.push(
      '<h2>Values it will consume</h2><dl class="pg-consumes">',
      ...stepGate.consumes.map(
        (v) =>
          `<dt><code>${clean(v.raw)}</code></dt><dd>${v.value !== undefined ? `<pre><code>${clean(v.value)}</code></pre>` : 'not produced'}</dd>`,
      ),
      '</dl>',
    );
  parts.push('<h2>Already done</h2>');
  if (!stepGate.completed?.length) parts.push('<p>Nothing yet.</p>');
  else
    parts.push(
      '<ol class="pg-completed">',
      ...(stepGate.completedNotListed ? [`<li>… ${stepGate.completedNotListed} earlier steps</li>`] : []),
      ...stepGate.completed.map((done) => {
        const evidence = done.evidence
          ? `${done.evidence.passed ? 'passed' : 'FAILED'} ${clean(done.evidence.kind)} contract: ${clean(done.evidence.summary)}${done.evidence.excerpt ? `<pre><code>${clean(done.evidence.excerpt)}</code></pre>` : ''}`
          : 'no contract';
        return `<li><code>${clean(done.id)}</code>: ${evidence}</li>`;
      }),
      '</ol>',
    );
  parts.push('</section>');
  return parts.join('\n');
}

/** Everything a gate shows besides its header and form: people, deadline, and the view. */
export function gateViewHtml(
  gate: ShownGate,
  options: DeadlineOptions & { redactor?: Redactor } = {},
): string {
  return [
    gateWarningsHtml(gate),
    gatePeopleHtml(gate, options),
    ...(gate.view
      ? [stepCardsHtml(gate.view, options.redactor), planFactsHtml(gate.view, options.redactor)]
      : []),
    ...(gate.stepGate ? [stepGateHtml(gate.stepGate, options.redactor)] : []),
    ...(gate.abortRollsBack ? [abortRollbacksHtml(gate.abortRollsBack, options.redactor)] : []),
  ].join('\n');
}

function stepCard(step: StepView, number: number | undefined, clean: Clean): string {
  // The card is marked by what the step itself runs; a contract's or rollback's marks mark that part.
  const risky = ownCallMarked(step.risks) || (step.risks.outsideWorkspace?.length ?? 0) > 0;
  const tool = step.target !== undefined ? `agent ${clean(step.target)}` : clean(step.tool);
  const flags = [
    ...(step.requiresApproval ? ['requires approval'] : []),
    ...(step.requiresHuman ? ['done by a person'] : []),
    ...(step.critical ? [] : ['not critical']),
  ];
  const meta = [
    ...(step.timeoutSeconds !== undefined ? [`step timeout ${step.timeoutSeconds} s`] : []),
    ...(step.recovery ? [clean(recoveryText(step.recovery))] : []),
    ...(step.dependsOn.length > 0
      ? [`after ${step.dependsOn.map((d) => `<code>${clean(d)}</code>`).join(', ')}`]
      : []),
    ...(step.outputs.length > 0
      ? [`outputs ${step.outputs.map((o) => `<code>${clean(o)}</code>`).join(', ')}`]
      : []),
  ];
  return [
    `<article class="pg-step${risky ? ' pg-risky' : ''}" id="step-${clean(step.id)}">`,
    `<h3>${number !== undefined ? `${number}. ` : ''}<code>${clean(step.id)}</code> ${clean(step.description)}</h3>`,
    `<p class="pg-tool">via ${tool}${flags.length > 0 ? ` · ${flags.join(' · ')}` : ''}</p>`,
    `<ul class="pg-risks">${riskPhrases(step)
      .map((p) => `<li${isWarningPhrase(p) ? ' class="pg-risk"' : ''}>${clean(p)}</li>`)
      .join('')}</ul>`,
    ...(step.call
      ? [callHtml('Runs', step.call, clean)]
      : step.detailsOmitted
        ? ['<p class="pg-omitted">Command not shown: too large for this gate.</p>']
        : []),
    ...(step.agent ? [agentHtml(step.agent, clean)] : []),
    ...(step.revised?.replaces ? [callHtml('Was', step.revised.replaces, clean)] : []),
    ...(step.contract ? [callHtml('Contract', step.contract, clean, contractRiskPhrases(step))] : []),
    ...(step.rollback
      ? [
          callHtml(
            `Rollback (${clean(step.rollback.tool)})`,
            step.rollback.call,
            clean,
            rollbackRiskPhrases(step),
          ),
          ...(step.rollback.contract ? [callHtml('Rollback contract', step.rollback.contract, clean)] : []),
        ]
      : []),
    ...(meta.length > 0 ? [`<p class="pg-meta">${meta.join(' · ')}</p>`] : []),
    '</article>',
  ].join('\n');
}

/** An agent step's run: who runs it, the exact command, workspace, reach, time limit and budget. */
function agentHtml(agent: AgentStepView, clean: Clean): string {
  return [
    '<dl class="pg-agent">',
    ...agentFacts(agent).map(
      (fact) =>
        `<dt>${escapeHtml(fact.label)}</dt><dd>${fact.code ? `<pre><code>${clean(fact.value)}</code></pre>` : clean(fact.value)}</dd>`,
    ),
    '</dl>',
  ].join('');
}

/**
 * A call: its label and form, the exact text in `<pre><code>`, its details and run-time
 * references; with `marks`, those marks (its own, e.g. a destructive rollback's) and its frame.
 */
function callHtml(label: string, call: ShownCall, clean: Clean, marks: readonly string[] = []): string {
  const details = (call.details ?? []).map((d) =>
    d.code || d.value.includes('\n')
      ? `<div class="pg-detail">${clean(d.label)}:<pre><code>${clean(d.value)}</code></pre></div>`
      : `<div class="pg-detail">${clean(d.label)}: <code>${clean(d.value)}</code></div>`,
  );
  const references = (call.references ?? []).map(
    (r) =>
      `<li><code>${clean(r.raw)}</code>: filled at run time from step <code>${clean(r.step)}</code></li>`,
  );
  return [
    `<div class="pg-call pg-${call.form}${marks.length > 0 ? ' pg-risky' : ''}">`,
    `<p>${label} (${call.form}${call.expect ? `, passes on ${clean(call.expect)}` : ''}):</p>`,
    ...marks.map((mark) => `<p class="pg-risk">${clean(mark)}</p>`),
    `<pre><code>${clean(call.text)}</code></pre>`,
    ...details,
    ...(references.length > 0 ? [`<ul class="pg-references">${references.join('')}</ul>`] : []),
    '</div>',
  ].join('\n');
}
