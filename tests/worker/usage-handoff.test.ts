/** What an agent's output says it used, and what its handoff says of the budget. */
import { describe, expect, it } from 'vitest';
import { HandoffSchema } from '../../lib/runtime/payloads/index.ts';
import { agentTimeoutSeconds, renderHandoff } from '../../lib/runtime/steps/handoff.ts';
import { agentUsage } from '../../lib/runtime/tools/agent-usage.ts';

describe('agentUsage', () => {
  it("reads Claude Code's JSON result (--output-format json): every input and output token, and the cost", () => {
    const result = JSON.stringify({
      type: 'result',
      subtype: 'success',
      result: 'Done.\n{"usage": "inside the text is not the report"}',
      total_cost_usd: 0.0421,
      usage: {
        input_tokens: 12,
        cache_creation_input_tokens: 3000,
        cache_read_input_tokens: 20000,
        output_tokens: 900,
      },
    });
    expect(agentUsage(`${result}\n`)).toEqual({ kind: 'usage', usage: { tokens: 23912, costUsd: 0.0421 } });
  });

  it('reads the last line of stream-json, and the simple form after other output', () => {
    const stream = [
      '{"type":"system"}',
      '{"type":"assistant"}',
      '{"type":"result","usage":{"input_tokens":5,"output_tokens":7},"total_cost_usd":0.01}',
    ];
    expect(agentUsage(stream.join('\n'))).toEqual({ kind: 'usage', usage: { tokens: 12, costUsd: 0.01 } });
    expect(agentUsage('edited 3 files\n{"usage":{"tokens":1200,"cost_usd":0.03}}\n')).toEqual({
      kind: 'usage',
      usage: { tokens: 1200, costUsd: 0.03 },
    });
    expect(agentUsage('{"usage":{"tokens":40}}')).toEqual({ kind: 'usage', usage: { tokens: 40 } });
  });

  it('reports nothing for output that makes no usage report', () => {
    for (const stdout of ['', 'done', '{"status":"ok"}', '[1,2]', '{"usage":{}}', '{not json'])
      expect(agentUsage(stdout), stdout).toEqual({ kind: 'none' });
  });

  it('says which value of a usage report is wrong', () => {
    expect(agentUsage('{"usage":{"tokens":-5}}')).toEqual({
      kind: 'invalid',
      problem: "the usage line's usage.tokens is not a non-negative number",
    });
    expect(agentUsage('{"usage":{"input_tokens":1},"total_cost_usd":"cheap"}')).toEqual({
      kind: 'invalid',
      problem: "the usage line's total_cost_usd is not a non-negative number",
    });
  });
});

describe('the handoff of an agent step on a budget', () => {
  const handoff = (budget: Record<string, number>, timeoutSeconds = 60) =>
    HandoffSchema.parse({
      plan: { id: 'p', version: 1, digest: 'sha256:00' },
      executionId: 'e',
      stepId: 'fix',
      index: 2,
      total: 3,
      description: 'Fix it',
      target: 'coder',
      attempt: 1,
      timeoutSeconds,
      heartbeatSeconds: 60,
      budget,
    });

  it("says what is left, the command limit, and the step's time cut to the wall clock left", () => {
    const text = renderHandoff(
      handoff({ wallClockSeconds: 41.9, tokens: 5000, costUsd: 0.5, maxCommands: 30 }),
    );
    expect(text).toContain("- Finish within 41 s (the plan's wall-clock budget left).");
    expect(text).toContain(
      '- Run at most 30 commands; when near the limit, conclude with the data you have.',
    );
    expect(text).toContain("- Tokens left in the plan's budget: 5000.");
    expect(text).toContain("- Cost left in the plan's budget: $0.50.");
    expect(text).toContain('{"usage": {"tokens": N, "cost_usd": X}}');
  });

  it('gives the step its own time when the wall clock left is longer, and says nothing of a budget it has not', () => {
    const text = renderHandoff(handoff({}, 60));
    expect(text).toContain('- Finish within 60 s.');
    expect(text).not.toContain('budget');
    expect(agentTimeoutSeconds(handoff({ wallClockSeconds: 600 }, 60))).toBe(60);
    expect(agentTimeoutSeconds(handoff({ wallClockSeconds: 0.2 }, 60))).toBe(1);
  });
});
