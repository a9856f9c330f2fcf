/**
 * Plans the Markdown format can say, and a writer that says them in Markdown (seed 004, as
 * docs/plan-formats.md describes it), for the parser's round-trip property. The writer takes
 * a `pick` so one plan is written each of the ways the format allows (yaml or json blocks,
 * `yes` or `true`, step numbers or ids in `depends_on`, an omitted default, …).
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import type { PlanInput } from '../../lib/plan/schema.ts';

/** Chooses one of the ways to write something. */
export type Pick = <T>(options: readonly [T, ...T[]]) => T;

type Document = PlanInput & { steps: StepDocument[] };
type StepDocument = PlanInput['steps'][number];
type ContractDocument = NonNullable<StepDocument['contract']>;

// Text a line of the format carries as it is: trimmed, and not read as a heading, field, item or fence.
const text = (max: number) =>
  fc.stringMatching(new RegExp(`^[A-Za-z0-9][A-Za-z0-9 ,.:;'"()<>{}|$/=#?!-]{0,${max}}[A-Za-z0-9.)]$`));
// `none` and `step 3` in depends_on are not ids, so no id may look like them.
const id = fc.stringMatching(/^[a-z][a-z0-9_-]{0,20}$/).filter((s) => !/^(none|step[0-9]+)$/.test(s));
const json = fc
  .jsonValue({ maxDepth: 2 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
  .filter((value) => !JSON.stringify(value).includes('__proto__'));
const record = fc.dictionary(fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/), json, { maxKeys: 3 });
const commandText = fc.oneof(
  fc.constantFrom('true', 'test -f out.txt', "grep -q '^ok$' log.txt && echo done", 'printf "%s\\n" a b'),
  fc.array(text(30), { minLength: 1, maxLength: 3 }).map((lines) => lines.join('\n')),
  // A line of only backticks inside a block: the writer must fence it with a longer run.
  fc.constant('cat <<EOF\n```\nEOF'),
);

const contract: fc.Arbitrary<ContractDocument> = fc.oneof(
  fc.record(
    {
      kind: fc.constant('command' as const),
      command: commandText,
      expectExitCode: fc.integer({ min: 0, max: 255 }),
      stdoutMatches: fc.stringMatching(/^[A-Za-z0-9.*+?^$()[\]|\\-]{1,20}$/),
    },
    { requiredKeys: ['kind', 'command'] },
  ),
  fc.record(
    {
      kind: fc.constant('command' as const),
      command: commandText,
      cwd: fc.constantFrom('src', '/tmp'),
      timeoutSeconds: fc.integer({ min: 1, max: 3600 }),
    },
    { requiredKeys: ['kind', 'command'] },
  ),
  fc.record({
    kind: fc.constant('assert' as const),
    expression: fc.constantFrom('output.ok = true', '$exists(output)'),
  }),
  fc.record(
    {
      kind: fc.constant('http' as const),
      url: fc.constant('https://example.com/health'),
      expectStatus: fc.constant(204),
    },
    { requiredKeys: ['kind', 'url'] },
  ),
  fc.record({ kind: fc.constant('lambda' as const), functionName: id, payload: record }),
);

const step = fc.record(
  {
    id,
    description: text(60),
    how: fc.oneof(
      fc.record({ tool: fc.constantFrom('echo', 'shell', 'http', 'wait'), args: record }),
      fc.record({
        target: fc.constantFrom('coder', 'reviewer'),
        task: fc
          .tuple(fc.array(text(40), { maxLength: 3 }), fc.array(text(20), { maxLength: 2 }))
          .map(([lines, items]) => [...lines, ...items.map((item) => `- ${item}`)].join('\n')),
      }),
    ),
    dependsOn: fc.array(fc.nat(), { maxLength: 3 }),
    contract,
    requiresApproval: fc.boolean(),
    requiresHuman: fc.boolean(),
    critical: fc.boolean(),
    timeoutSeconds: fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(60, 1200, 7200)),
    onFail: fc.record({
      retries: fc.integer({ min: 0, max: 10 }),
      escalation: fc.constantFrom('ask', 'skip', 'abort'),
    }),
    outputs: fc.uniqueArray(id, { maxLength: 3 }),
    subscriptions: fc.array(fc.stringMatching(/^(file|topic):[A-Za-z0-9_./-]{1,20}$/), { maxLength: 3 }),
    rollback: fc.oneof(
      fc.record({ tool: fc.constant('shell'), args: fc.record({ command: commandText }) }),
      fc.record({ tool: fc.constantFrom('http', 'echo'), args: record }),
    ),
  },
  { requiredKeys: ['id', 'description', 'how', 'dependsOn'] },
);

/** A plan document (before defaults) that the Markdown format can express. */
export const markdownPlan: fc.Arbitrary<Document> = fc
  .record(
    {
      id: fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/),
      version: fc.integer({ min: 1, max: 50 }),
      status: fc.constantFrom('draft', 'verified', 'approved', 'in-progress', 'done', 'failed'),
      owner: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,20}$/),
      sizePolicy: fc.record(
        { minSteps: fc.integer({ min: 1, max: 5 }), maxSteps: fc.integer({ min: 5, max: 50 }) },
        {
          requiredKeys: [],
        },
      ),
      objective: text(80),
      summary: text(80),
      facts: record.map((facts) => {
        const { summary: _, ...rest } = facts;
        return rest;
      }),
      notes: fc.dictionary(fc.stringMatching(/^note_[a-z]{1,6}$/), text(30), { maxKeys: 2 }),
      budget: fc.record(
        {
          tokens: fc.integer({ min: 1, max: 1_000_000_000 }),
          costUsd: fc.integer({ min: 0, max: 100_000 }).map((cents) => cents / 100),
          wallClockSeconds: fc.integer({ min: 1, max: 1_000_000 }),
        },
        { requiredKeys: [] },
      ),
      secrets: fc.uniqueArray(
        fc.record({
          name: fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/),
          source: fc.constantFrom('env' as const, 'secretsmanager' as const),
          ref: fc.stringMatching(/^[A-Za-z0-9_/.-]{1,20}$/),
        }),
        { selector: (s) => s.name, maxLength: 3 },
      ),
      approval: fc.record(
        {
          approvers: fc.array(fc.stringMatching(/^[a-z]{1,8}@example\.com$/), { minLength: 1, maxLength: 3 }),
          quorum: fc.integer({ min: 1, max: 20 }),
        },
        { requiredKeys: [] },
      ),
      steps: fc.uniqueArray(step, { selector: (s) => s.id, minLength: 1, maxLength: 7 }),
      postconditions: fc.uniqueArray(fc.record({ id, description: text(60), contract }), {
        selector: (p) => p.id,
        maxLength: 3,
      }),
    },
    { requiredKeys: ['id', 'objective', 'steps'] },
  )
  .map(({ summary, facts, notes, steps, sizePolicy, ...plan }) => {
    const context = { ...(summary === undefined ? {} : { summary }), ...facts, ...notes };
    return {
      ...plan,
      ...(sizePolicy && Object.keys(sizePolicy).length > 0 ? { sizePolicy } : {}),
      ...(Object.keys(context).length > 0 ? { context } : {}),
      steps: steps.map(({ how, dependsOn, ...rest }, index) => ({
        ...rest,
        ...how,
        // Only earlier steps, so the plan could run; each at most once.
        dependsOn: [...new Set(dependsOn.filter((d) => d < index).map((d) => steps[d]!.id))],
      })),
    } as Document;
  });

/** Writes a plan document as a Markdown plan file. */
export function writeMarkdownPlan(plan: Document, pick: Pick): string {
  const front: Record<string, unknown> = {};
  for (const key of ['status', 'owner', 'id', 'version'] as const)
    if (plan[key] !== undefined) front[key] = plan[key];
  if (plan.sizePolicy?.minSteps !== undefined) front.min_steps = plan.sizePolicy.minSteps;
  if (plan.sizePolicy?.maxSteps !== undefined) front.max_steps = plan.sizePolicy.maxSteps;
  const lines = [
    '---',
    pick(['type: plan', '']),
    stringify(front).trimEnd(),
    '---',
    '',
    `# ${plan.objective}`,
    '',
  ];
  lines.push(...contextLines(plan.context ?? {}, pick));
  if (plan.budget && Object.keys(plan.budget).length > 0) {
    const { tokens, costUsd, wallClockSeconds } = plan.budget;
    const parts = [
      tokens === undefined ? undefined : pick([`${tokens} tokens`, `max ${tokens} tokens`]),
      costUsd === undefined ? undefined : `$${costUsd}`,
      wallClockSeconds === undefined
        ? undefined
        : `${pick(durations(wallClockSeconds))}${pick(['', ' wall clock'])}`,
    ].filter((part) => part !== undefined);
    lines.push(`**Budget:** ${parts.join(pick([', ', '; ']))}`);
  }
  if (plan.secrets && plan.secrets.length > 0)
    lines.push(
      '**Secrets:**',
      ...plan.secrets.map((s) =>
        pick([`- ${s.name}: ${s.source}:${s.ref}`, `- \`${s.name}\`: \`${s.source}:${s.ref}\``]),
      ),
    );
  if (plan.approval?.approvers) lines.push(`**Approvers:** ${plan.approval.approvers.join(', ')}`);
  if (plan.approval?.quorum !== undefined) lines.push(`**Quorum:** ${plan.approval.quorum}`);
  lines.push('', pick(['## Steps', '## steps', '']), '');
  plan.steps.forEach((step, index) => {
    lines.push(...stepLines(step, index, plan.steps, pick), '');
  });
  if (plan.postconditions && plan.postconditions.length > 0) {
    lines.push('## Postconditions', '');
    plan.postconditions.forEach((pc, index) => {
      lines.push(
        pick([
          `### ${index + 1}. ${pc.description}`,
          // Without a number, unless the description would read as one.
          /^\d+[.)]/.test(pc.description) ? `### ${index + 1}) ${pc.description}` : `### ${pc.description}`,
        ]),
        `**id:** ${pc.id}`,
      );
      lines.push(...contractLines(pc.contract, pick), '');
    });
  }
  return lines.join(pick(['\n', '\r\n']));
}

function contextLines(context: Record<string, unknown>, pick: Pick): string[] {
  const { summary, ...rest } = context;
  const notes = Object.entries(rest).filter(([key]) => key.startsWith('note_'));
  const facts = Object.fromEntries(Object.entries(rest).filter(([key]) => !key.startsWith('note_')));
  const lines: string[] = [];
  if (summary !== undefined || Object.keys(facts).length > 0) {
    lines.push(`**Context:**${summary === undefined ? '' : ` ${String(summary)}`}`);
    if (Object.keys(facts).length > 0) lines.push(...structuredBlock(facts, pick));
  }
  for (const [key, value] of notes)
    lines.push(`**${pick([key, key.replace('_', ' '), key.replace('_', '-')])}:** ${String(value)}`);
  return lines;
}

function stepLines(step: StepDocument, index: number, steps: readonly StepDocument[], pick: Pick): string[] {
  const lines = [
    pick([`### ${index + 1}. ${step.description}`, `### ${index + 1}) ✅ ${step.description}`]),
    `**id:** ${step.id}`,
  ];
  if (step.target !== undefined) lines.push(`**target:** ${step.target}`);
  if (step.task !== undefined) lines.push('**task:**', ...step.task.split('\n'));
  if (step.tool !== undefined) lines.push(pick([`**tool:** ${step.tool}`, `**tool:** \`${step.tool}\``]));
  if (step.args !== undefined) lines.push('**args:**', ...structuredBlock(step.args, pick));
  const deps = step.dependsOn ?? [];
  const previous = steps[index - 1]?.id;
  const isDefault = previous === undefined ? deps.length === 0 : deps.length === 1 && deps[0] === previous;
  if (!isDefault || pick([true, false]))
    lines.push(
      deps.length === 0
        ? pick(['**depends_on:** none', '**depends_on:** []'])
        : `**depends_on:** ${deps.map((d) => pick([d, `${steps.findIndex((s) => s.id === d) + 1}`, `step ${steps.findIndex((s) => s.id === d) + 1}`])).join(', ')}`,
    );
  if (step.contract !== undefined) lines.push(...contractLines(step.contract, pick));
  if (step.onFail !== undefined) lines.push(`**on_fail:** ${pick(onFailTexts(step.onFail))}`);
  for (const [key, name] of [
    ['requiresApproval', 'requires_approval'],
    ['requiresHuman', 'requires_human'],
    ['critical', 'critical'],
  ] as const) {
    const value = step[key];
    if (value !== undefined)
      lines.push(`**${name}:** ${value ? pick(['true', 'yes', 'Y']) : pick(['false', 'no', 'N'])}`);
  }
  if (step.outputs && step.outputs.length > 0)
    lines.push(
      ...pick([
        [`**outputs:** ${step.outputs.join(', ')}`],
        ['**outputs:**', ...step.outputs.map((o) => `- ${o}`)],
      ]),
    );
  if (step.subscriptions && step.subscriptions.length > 0)
    lines.push('**subscriptions:**', ...step.subscriptions.map((s) => `- ${s}`));
  if (step.timeoutSeconds !== undefined)
    lines.push(`**timeout_seconds:** ${pick(durations(step.timeoutSeconds))}`);
  if (step.rollback !== undefined) {
    const command = step.rollback.tool === 'shell' ? step.rollback.args?.command : undefined;
    lines.push(
      '**rollback:**',
      ...(typeof command === 'string' && Object.keys(step.rollback.args ?? {}).length === 1
        ? fenced(pick(['shell', 'sh', '']), command)
        : structuredBlock(step.rollback, pick)),
    );
  }
  return lines;
}

function contractLines(contract: ContractDocument, pick: Pick): string[] {
  if (contract.kind === 'assert') return ['**contract:**', ...fenced('jsonata', contract.expression)];
  if (contract.kind !== 'command' || contract.cwd !== undefined || contract.timeoutSeconds !== undefined)
    return ['**contract:**', ...structuredBlock(contract, pick)];
  const oneLine = !contract.command.includes('\n') && !contract.command.includes('`');
  const lines =
    oneLine && pick([true, false])
      ? [`**contract:** \`${contract.command}\``]
      : ['**contract:**', ...fenced(pick(['shell', 'bash', 'sh', '']), contract.command)];
  if (contract.expectExitCode !== undefined) lines.push(`exit_code == ${contract.expectExitCode}`);
  if (contract.stdoutMatches !== undefined)
    lines.push(
      pick([`stdout_matches: \`${contract.stdoutMatches}\``, `stdout_matches: ${contract.stdoutMatches}`]),
    );
  return lines;
}

function onFailTexts({
  retries = 0,
  escalation = 'ask',
}: NonNullable<StepDocument['onFail']>): [string, ...string[]] {
  const word = escalation === 'ask' ? 'escalate' : escalation;
  const texts: [string, ...string[]] = [`retry(${retries}), then ${word}`, `\`retry(${retries}), ${word}\``];
  if (retries === 0) texts.push(word);
  if (escalation === 'ask') texts.push(`retry(${retries})`);
  return texts;
}

function durations(seconds: number): [string, ...string[]] {
  const texts: [string, ...string[]] = [`${seconds}`, `${seconds}s`, `${seconds} seconds`];
  if (seconds % 60 === 0) texts.push(`${seconds / 60} minutes`, `${seconds / 60} min`);
  if (seconds % 3600 === 0) texts.push(`${seconds / 3600} h`, `${seconds / 3600} hours`);
  return texts;
}

/** A yaml or json fenced block. */
function structuredBlock(value: unknown, pick: Pick): string[] {
  return pick([fenced('yaml', stringify(value).trimEnd()), fenced('json', JSON.stringify(value, null, 2))]);
}

/** A fenced block whose fence is longer than any run of backticks alone on a line of the body. */
function fenced(lang: string, body: string): string[] {
  const longest = Math.max(
    2,
    ...body.split('\n').map((line) => (/^`+$/.test(line.trim()) ? line.trim().length : 0)),
  );
  const fence = '`'.repeat(longest + 1);
  return [`${fence}${lang}`, ...body.split('\n'), fence];
}
