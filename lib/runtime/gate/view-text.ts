/**
 * A gate as plain text: the terminal of `plangate run` and the text part of the approval email.
 * Commands, URLs and contracts are shown exactly, indented; every hidden character of plan text
 * (ANSI escapes, carriage returns, bidirectional controls, zero-width characters, …) is shown as a
 * labelled symbol (lib/plan/visible-text.ts), so a hostile plan can neither rewrite the terminal
 * nor hide text from the approver. The gate's warnings come first.
 */
import { visibleText } from '../../plan/visible-text.ts';
import type {
  AbortRollback,
  AgentStepView,
  ContextEntry,
  ShownCall,
  StepGateView,
  StepView,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
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

export interface GateTextOptions extends DeadlineOptions {
  /** Redacts credential shapes in plan text (email). @default - a Redactor of credential shapes */
  readonly redactor?: Redactor;
}

/** Who, the deadline and what the approval covers, as lines of text. */
export function gateText(gate: ShownGate, options: GateTextOptions = {}): string {
  const redactor = options.redactor ?? new Redactor();
  const clean = (text: string) => visibleText(redactPlanText(redactor, text));
  const lines: string[] = [];
  for (const warning of gate.warnings)
    lines.push(`!! ${warning.title}`, ...warning.items.map((item) => `   - ${clean(item)}`), '');
  if (gate.supersededBy !== undefined)
    lines.push(
      `SUPERSEDED by ${clean(supersededText(gate.supersededBy))}: this version can no longer be approved.`,
    );
  if (gate.submittedBy !== undefined) lines.push(`Submitted by: ${clean(gate.submittedBy)}`);
  if (gate.runsAs !== undefined) lines.push(`Runs as: ${clean(gate.runsAs)}`);
  if (gate.kind === 'plan' || gate.kind === 'step') {
    lines.push(`May approve: ${clean(approversText(gate))}`);
    lines.push(`Approvals: ${clean(quorumText(gate))}`);
  }
  if (gate.revision) lines.push(`Modified: ${revisionLine(gate.revision)}`);
  lines.push(`Answer by: ${deadlineText(gate.expiresAt, options)}`);
  if (gate.recovery) lines.push(...suggestionLines(gate.recovery, clean));
  if (gate.view) {
    const view = gate.view;
    const { notListed } = omitted(view);
    lines.push('', `Steps (${view.truncated?.total ?? view.steps.length}):`);
    view.steps.forEach((step, i) => {
      lines.push(...stepLines(step, i + 1, clean));
    });
    if (notListed > 0) lines.push(`  … ${notListed} more steps are not listed here.`);
    if (view.postconditions.length > 0) {
      lines.push('', 'Postconditions (checked after the run):');
      for (const post of view.postconditions) {
        lines.push(`- ${clean(post.id)}: ${clean(post.description)}`);
        if (post.risks.length > 0) lines.push(`  !! DESTRUCTIVE check: ${clean(post.risks.join('; '))}`);
        for (const phrase of effectPhrases(post)) lines.push(`  !! check: ${clean(phrase)}`);
        if (post.contract) lines.push(...callLines('check', post.contract, clean, '  '));
      }
    }
    if (view.budget) lines.push('', `Budget: ${budgetText(view.budget)}`);
    lines.push(
      `Secrets used (names only): ${view.secrets.length > 0 ? clean(view.secrets.join(', ')) : 'none'}`,
    );
    if (view.context) lines.push(...contextLines(view.context, clean));
  }
  if (gate.stepGate) lines.push(...stepGateLines(gate.stepGate, clean));
  if (gate.abortRollsBack) {
    lines.push('', abortRollbacksText(gate.abortRollsBack));
    gate.abortRollsBack.forEach((rollback, i) => {
      lines.push(...abortRollbackLines(rollback, i + 1, clean));
    });
  }
  return lines.join('\n');
}

/** The plan's context: each key = its value (indented when on several lines), then its marks. */
function contextLines(entries: readonly ContextEntry[], clean: (text: string) => string): string[] {
  const lines = ['', `${CONTEXT_TITLE}:`];
  for (const entry of entries) {
    const value = clean(entry.value);
    if (value.includes('\n')) lines.push(`- ${clean(entry.key)} =`, ...indent(value, '    '));
    else lines.push(`- ${clean(entry.key)} = ${value}`);
    for (const phrase of contextPhrases(entry))
      lines.push(`  ${isWarningPhrase(phrase) ? '!! ' : ''}${clean(phrase)}`);
  }
  return lines;
}

/** One rollback an abort runs: the call as it will run (values filled in), its marks, its values. */
function abortRollbackLines(
  rollback: AbortRollback,
  number: number,
  clean: (text: string) => string,
): string[] {
  const lines = callLines(
    `${number}. undo ${clean(rollback.stepId)} (${clean(rollback.tool)})`,
    abortRollbackCall(rollback),
    clean,
    '  ',
  );
  for (const phrase of abortRollbackPhrases(rollback)) lines.push(`    !! ${clean(phrase)}`);
  for (const value of rollback.values ?? []) lines.push(`    ${clean(filledValueText(value))}`);
  return lines;
}

/** The model's suggestion, beside the person's choices: what it suggests, why, what changes, what accepting does. */
function suggestionLines(
  advice: NonNullable<ShownGate['recovery']>,
  clean: (text: string) => string,
): string[] {
  const shown = suggestionText(advice);
  return [
    '',
    clean(shown.headline),
    ...indent(`Why: ${clean(shown.reasons)}`, '  '),
    ...shown.changes.flatMap((change) => indent(`Change: ${clean(change)}`, '  ')),
    `  accept: ${clean(shown.accepting)}`,
  ];
}

function stepGateLines(stepGate: StepGateView, clean: (text: string) => string): string[] {
  const lines = ['', 'The step:', ...stepLines(stepGate.step, undefined, clean)];
  if (stepGate.step.detailsOmitted)
    lines.push('  Its command is too large for this gate: `plangate render <plan> --format yaml` shows it.');
  if (stepGate.consumes?.length) {
    lines.push('', 'Values it will consume:');
    for (const value of stepGate.consumes)
      lines.push(
        `- ${clean(value.raw)} = ${value.value !== undefined ? clean(value.value) : '(not produced)'}`,
      );
  }
  lines.push('', 'Already done:');
  if (!stepGate.completed?.length) lines.push('- nothing yet');
  if (stepGate.completedNotListed) lines.push(`- … ${stepGate.completedNotListed} earlier steps`);
  for (const done of stepGate.completed ?? []) {
    const evidence = done.evidence
      ? `${done.evidence.passed ? 'passed' : 'FAILED'} ${done.evidence.kind} contract: ${done.evidence.summary}`
      : 'no contract';
    lines.push(`- ${clean(done.id)}: ${clean(evidence)}`);
    if (done.evidence?.excerpt) lines.push(...indent(clean(done.evidence.excerpt), '    '));
  }
  return lines;
}

function stepLines(step: StepView, number: number | undefined, clean: (text: string) => string): string[] {
  const head = `${number !== undefined ? `${number}. ` : ''}${clean(step.id)}: ${clean(step.description)}`;
  const lines = [head];
  const pad = '   ';
  const tool = step.target !== undefined ? `agent ${clean(step.target)}` : clean(step.tool);
  const flags = [
    ...(step.requiresApproval ? ['requires approval'] : []),
    ...(step.requiresHuman ? ['done by a person'] : []),
    ...(step.critical ? [] : ['not critical']),
  ];
  lines.push(`${pad}via ${tool}${flags.length > 0 ? ` · ${flags.join(' · ')}` : ''}`);
  for (const phrase of riskPhrases(step))
    lines.push(`${pad}${isWarningPhrase(phrase) ? '!! ' : ''}${clean(phrase)}`);
  if (step.call) lines.push(...callLines('runs', step.call, clean, pad));
  else if (step.detailsOmitted) lines.push(`${pad}(command not shown: too large for this gate)`);
  if (step.agent) lines.push(...agentLines(step.agent, clean, pad));
  if (step.revised?.replaces) lines.push(...callLines('was', step.revised.replaces, clean, pad));
  if (step.contract) {
    lines.push(...callLines('contract', step.contract, clean, pad));
    for (const phrase of contractRiskPhrases(step)) lines.push(`${pad}  !! ${clean(phrase)}`);
  }
  if (step.rollback) {
    lines.push(...callLines(`rollback (${clean(step.rollback.tool)})`, step.rollback.call, clean, pad));
    for (const phrase of rollbackRiskPhrases(step)) lines.push(`${pad}  !! ${clean(phrase)}`);
    if (step.rollback.contract)
      lines.push(...callLines('rollback contract', step.rollback.contract, clean, pad));
  }
  const settings = [
    ...(step.timeoutSeconds !== undefined ? [`step timeout ${step.timeoutSeconds} s`] : []),
    ...(step.recovery ? [recoveryText(step.recovery)] : []),
  ];
  if (settings.length > 0) lines.push(`${pad}${settings.join(' · ')}`);
  const links = [
    ...(step.dependsOn.length > 0 ? [`after ${step.dependsOn.join(', ')}`] : []),
    ...(step.outputs.length > 0 ? [`outputs ${step.outputs.join(', ')}`] : []),
  ];
  if (links.length > 0) lines.push(`${pad}${clean(links.join(' · '))}`);
  return lines;
}

/** An agent step's run: who runs it, the exact command (indented), workspace, reach, limits. */
function agentLines(agent: AgentStepView, clean: (text: string) => string, pad: string): string[] {
  const lines: string[] = [];
  for (const fact of agentFacts(agent)) {
    if (fact.code) lines.push(`${pad}${fact.label}:`, ...indent(clean(fact.value), `${pad}    `));
    else lines.push(`${pad}${fact.label}: ${clean(fact.value)}`);
  }
  return lines;
}

/** "runs (command):" then the exact text indented, its details, and its run-time references. */
function callLines(label: string, call: ShownCall, clean: (text: string) => string, pad: string): string[] {
  const lines = [`${pad}${label} (${call.form}${call.expect ? `, passes on ${clean(call.expect)}` : ''}):`];
  lines.push(...indent(clean(call.text), `${pad}    `));
  for (const detail of call.details ?? []) {
    if (detail.code || detail.value.includes('\n')) {
      lines.push(`${pad}  ${clean(detail.label)}:`);
      lines.push(...indent(clean(detail.value), `${pad}    `));
    } else lines.push(`${pad}  ${clean(detail.label)}: ${clean(detail.value)}`);
  }
  for (const ref of call.references ?? [])
    lines.push(`${pad}  ${clean(ref.raw)}: filled at run time from step ${clean(ref.step)}`);
  return lines;
}

function indent(text: string, pad: string): string[] {
  return text.split('\n').map((line) => `${pad}${line}`);
}
