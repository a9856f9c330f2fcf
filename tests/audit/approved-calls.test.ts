/**
 * `approved-calls`: audit verify recomputes each TASK_STARTED's call from the approved step and
 * the values it recorded, and names the event where what ran differs from what was approved.
 */
import { describe, expect, it } from 'vitest';
import { approvedCallProblems } from '../../lib/audit/approved-calls.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { fillShellCommand } from '../../lib/runtime/secrets/shell-command.ts';
import { fillUrl } from '../../lib/runtime/secrets/url-binding.ts';

const TEMPLATE = 'printf %s "${steps.meta.tag}" > out.txt';
const URL_TEMPLATE = 'https://api.example.com/releases/${steps.meta.tag}';

function record(seq: number, event: string, details: Record<string, unknown>, task?: string): JournalRecord {
  return {
    timestamp: '2026-12-01T00:00:00.000Z',
    event,
    executionId: 'arn:exec',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:x',
    ...(task ? { task_id: task } : {}),
    details,
    seq,
    prevHash: '',
    hash: '',
  } as JournalRecord;
}

const created = (steps: Record<string, { tool: string; args: unknown }>) =>
  record(1, 'PLAN_CREATED', {
    task_count: Object.keys(steps).length,
    dependencies: {},
    steps: Object.fromEntries(
      Object.entries(steps).map(([id, s]) => [id, { tool: s.tool, args: JSON.stringify(s.args) }]),
    ),
  });

function shellCall(command: string, tag: string) {
  const filled = fillShellCommand(command, new Map([['${steps.meta.tag}', tag]]));
  return {
    tool: 'shell',
    values: [{ ref: '${steps.meta.tag}', value: tag, env: Object.keys(filled.env)[0] }],
    ran: { command: filled.command, env: Object.keys(filled.env) },
  };
}

const problems = (records: JournalRecord[]) => approvedCallProblems({ records });

describe('approved-calls', () => {
  it('passes a shell call that is the approved command with its values filled in, whatever the value', async () => {
    const value = 'x"; touch M; $(rm -rf /) `id`\n';
    expect(
      await problems([
        created({ use: { tool: 'shell', args: { command: TEMPLATE } } }),
        record(2, 'TASK_STARTED', { attempt: 1, call: shellCall(TEMPLATE, value) }, 'use'),
      ]),
    ).toEqual([]);
  });

  it('names the event where the command that ran is not the approved one', async () => {
    const found = await problems([
      created({ use: { tool: 'shell', args: { command: TEMPLATE } } }),
      record(2, 'TASK_STARTED', { attempt: 1, call: shellCall('rm -rf "${steps.meta.tag}"', 'x') }, 'use'),
    ]);
    expect(found).toEqual([
      {
        seq: 2,
        message: expect.stringContaining('step "use": the command that ran is not the approved command'),
      },
    ]);
  });

  it('refuses a value the approved args never referenced, and an extra environment variable', async () => {
    const call = shellCall(TEMPLATE, 'v1');
    const found = await problems([
      created({ use: { tool: 'shell', args: { command: TEMPLATE } } }),
      record(
        2,
        'TASK_STARTED',
        { call: { ...call, values: [...call.values, { ref: '${context.extra}', value: 'x' }] } },
        'use',
      ),
      record(
        3,
        'TASK_STARTED',
        { call: { ...call, ran: { ...call.ran, env: [...call.ran.env, 'BASH_ENV'] } } },
        'use',
      ),
    ]);
    expect(found.map((p) => [p.seq, p.message])).toEqual([
      [2, expect.stringContaining('${context.extra}, which the approved args do not reference')],
      [3, expect.stringContaining('was given the environment BASH_ENV')],
    ]);
  });

  it("follows the approvers: a plan gate's modification, then an accepted retry with changed args", async () => {
    const revised = 'printf %s "${steps.meta.tag}" > revised.txt';
    const retried = 'printf %s "${steps.meta.tag}" > retried.txt';
    const records = [
      created({ use: { tool: 'shell', args: { command: TEMPLATE } } }),
      record(2, 'GATE_APPROVED', {
        gate: 'plan',
        modifications: { skipSteps: [], argOverrides: { use: { command: revised } } },
      }),
      record(3, 'TASK_STARTED', { call: shellCall(revised, 'a') }, 'use'),
      record(
        4,
        'RECOVERY_SUGGESTED',
        {
          strategy: 'retry_with_args',
          reasons: 'r',
          provider: 'p',
          model: 'm',
          input_tokens: 1,
          output_tokens: 1,
          args: { command: retried },
        },
        'use',
      ),
      record(
        5,
        'RECOVERY_ESCALATION',
        { reason: 'x', user_decision: 'RETRY', suggestion: 'accepted' },
        'use',
      ),
      record(6, 'TASK_STARTED', { call: shellCall(retried, 'a') }, 'use'),
      // The unrevised command no longer is what was approved.
      record(7, 'TASK_STARTED', { call: shellCall(TEMPLATE, 'a') }, 'use'),
    ];
    expect((await problems(records)).map((p) => p.seq)).toEqual([7]);
  });

  it('recomputes a URL, and names a request that went elsewhere', async () => {
    const good = fillUrl(URL_TEMPLATE, new Map([['${steps.meta.tag}', '../admin']]));
    const call = (url: string) => ({
      tool: 'http',
      values: [{ ref: '${steps.meta.tag}', value: '../admin' }],
      ran: { method: 'GET', url },
    });
    const found = await problems([
      created({ get: { tool: 'http', args: { method: 'GET', url: URL_TEMPLATE } } }),
      record(2, 'TASK_STARTED', { call: call(good) }, 'get'),
      record(3, 'TASK_STARTED', { call: call('https://api.example.com/admin') }, 'get'),
    ]);
    expect(found.map((p) => p.seq)).toEqual([3]);
  });

  it('says so when the calls cannot be checked, rather than passing them', async () => {
    const found = await problems([
      record(1, 'PLAN_CREATED', { task_count: 1, dependencies: {} }),
      record(2, 'TASK_STARTED', { call: shellCall(TEMPLATE, 'a') }, 'use'),
    ]);
    expect(found).toEqual([{ message: expect.stringContaining('1 call(s) cannot be checked') }]);
  });
});
