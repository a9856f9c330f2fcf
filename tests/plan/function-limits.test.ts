/**
 * What cannot work where plan code runs on AWS (docs/deploy.md, "Where steps run on AWS"), refused
 * at validation with a located error: a command that leaves a process running after it ends (the
 * function is frozen once its invocation returns), and a time limit beyond the 900 s a Lambda
 * function runs, for everything the step runner, contract checker and plan-process function run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FUNCTION_TIMEOUT_SECONDS } from '../../lib/plan/function-limits.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { analyzeShell } from '../../lib/plan/shell/index.ts';
import { validatePlan } from '../../lib/plan/validate.ts';
import { HARNESS_HANDLERS } from '../../lib/runtime/catalog.ts';

const REPO = join(import.meta.dirname, '..', '..');

/** A three-step YAML plan; `serve` is the step under test, its lines given as written. */
function planText(serve: string[], extra: string[] = []): string {
  return [
    'id: limits',
    'version: 1',
    'objective: Prove the limits of plan code on AWS',
    'steps:',
    '  - id: first',
    '    description: Write a file',
    '    tool: shell',
    '    args: { command: "echo one > one.txt" }',
    '    contract: { kind: command, command: "test -f one.txt" }',
    '  - id: serve',
    '    description: Serve the file',
    '    dependsOn: [first]',
    ...serve,
    '  - id: last',
    '    description: Read the file',
    '    dependsOn: [serve]',
    '    tool: shell',
    '    args: { command: "cat one.txt" }',
    '    contract: { kind: command, command: "test -f one.txt" }',
    ...extra,
  ].join('\n');
}

async function problemsOf(text: string, code: string) {
  const parsed = parsePlanText(text, { filename: 'plan.yaml' });
  if (!parsed.plan) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  const result = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap });
  return { valid: result.valid, problems: result.problems.filter((p) => p.code === code) };
}

const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

describe('a command that leaves a process running after it ends', () => {
  it.each([
    ['a job started with `&`', 'python3 -m http.server 8000 &', 'runs in the background with `&`'],
    ['nohup', 'nohup ./serve.sh > serve.log 2>&1', 'nohup'],
    ['setsid', 'setsid ./serve.sh', 'setsid'],
    ['disown', './serve.sh & disown', 'disown'],
    ['a daemonizing flag', 'docker run -d nginx', 'detaches what it starts'],
    ['a nested shell', "bash -c 'sleep 100 &'", 'runs in the background with `&`'],
  ])('is refused at the step: %s', async (_what, command, reason) => {
    const text = planText([
      '    tool: shell',
      `    args: { command: ${JSON.stringify(command)} }`,
      '    requiresApproval: true',
      '    contract: { kind: command, command: "test -f one.txt" }',
    ]);
    const { valid, problems } = await problemsOf(text, 'background-process');
    expect(valid).toBe(false);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toContain(reason);
    expect(problems[0]?.message).toMatch(/\(at 1:\d+ of the command\)/);
    expect(problems[0]?.location).toMatchObject({
      file: 'plan.yaml',
      line: lineOf(text, JSON.stringify(command)),
    });
  });

  it('is refused in a contract, a rollback and a postcondition too, each where it is', async () => {
    const text = planText(
      [
        '    tool: shell',
        '    args: { command: "echo two > two.txt" }',
        '    contract: { kind: command, command: "sleep 5 & test -f two.txt" }',
        '    rollback: { tool: shell, args: { command: "nohup rm two.txt" } }',
      ],
      [
        'postconditions:',
        '  - id: done',
        '    description: Done',
        '    contract:',
        '      kind: command',
        '      command: "setsid true"',
      ],
    );
    const { problems } = await problemsOf(text, 'background-process');
    expect(problems.map((p) => p.location.line)).toEqual([
      lineOf(text, 'sleep 5 &'),
      lineOf(text, 'nohup rm'),
      lineOf(text, 'setsid true'),
    ]);
  });

  it('passes when the command waits for what it started, or starts nothing in the background', async () => {
    for (const command of ['sleep 1 & sleep 1 & wait', 'make 2>&1 > build.log && echo ok', 'ls &> list.txt'])
      expect(analyzeShell(command).background, command).toEqual([]);
    const text = planText([
      '    tool: shell',
      '    args: { command: "./serve.sh & sleep 1; curl -s localhost:8000 > got.txt; kill %1; wait" }',
      '    contract: { kind: command, command: "test -f got.txt" }',
    ]);
    expect((await problemsOf(text, 'background-process')).problems).toEqual([]);
  });
});

describe('a time limit beyond the function that runs it', () => {
  it('is what the step runner, the contract checker and the plan-process function are given', () => {
    for (const name of ['stepRunner', 'contractChecker', 'planProcess'] as const)
      expect(HARNESS_HANDLERS[name].timeoutSeconds).toBe(FUNCTION_TIMEOUT_SECONDS);
    expect(FUNCTION_TIMEOUT_SECONDS).toBe(900);
  });

  it('is refused at a shell step (timeoutSeconds: 3600), located at the field', async () => {
    const text = planText([
      '    tool: shell',
      '    timeoutSeconds: 3600',
      '    args: { command: "echo two > two.txt" }',
      '    contract: { kind: command, command: "test -f two.txt" }',
    ]);
    const { valid, problems } = await problemsOf(text, 'timeout-beyond-function');
    expect(valid).toBe(false);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toMatch(/step "serve" may run 3600 s, longer than the 900 s/);
    expect(problems[0]?.location.line).toBe(lineOf(text, 'timeoutSeconds: 3600'));
  });

  it('is refused at a contract, a command, a rollback and a postcondition', async () => {
    const text = planText(
      [
        '    tool: shell',
        '    args: { command: "echo two > two.txt", timeoutSeconds: 1200 }',
        '    contract: { kind: command, command: "test -f two.txt", timeoutSeconds: 901 }',
        '    rollback:',
        '      tool: shell',
        '      args: { command: "rm -f two.txt" }',
        '      contract: { kind: http, url: "https://example.com/", timeoutSeconds: 1000 }',
      ],
      [
        'postconditions:',
        '  - id: done',
        '    description: Done',
        '    contract:',
        '      kind: command',
        '      command: "true"',
        '      timeoutSeconds: 3600',
      ],
    );
    const { problems } = await problemsOf(text, 'timeout-beyond-function');
    expect(problems.map((p) => p.location.line)).toEqual([
      lineOf(text, 'timeoutSeconds: 1200'),
      lineOf(text, 'timeoutSeconds: 901'),
      lineOf(text, 'timeoutSeconds: 1000'),
      lineOf(text, 'timeoutSeconds: 3600'),
    ]);
  });

  it('holds for what a function runs, not for a worker agent, a person, or a budget that caps it', async () => {
    const agent = planText([
      '    target: coder',
      '    task: Write two.txt',
      '    timeoutSeconds: 3600',
      '    contract: { kind: command, command: "test -f two.txt", timeoutSeconds: 1800 }',
    ]);
    expect((await problemsOf(agent, 'timeout-beyond-function')).problems).toEqual([]);
    const capped = `${planText(['    tool: shell', '    timeoutSeconds: 3600', '    args: { command: "echo two > two.txt" }', '    contract: { kind: command, command: "test -f two.txt" }'])}\nbudget: { wallClockSeconds: 600 }`;
    expect((await problemsOf(capped, 'timeout-beyond-function')).problems).toEqual([]);
    const atLimit = planText([
      '    tool: shell',
      '    timeoutSeconds: 900',
      '    args: { command: "echo two > two.txt" }',
      '    contract: { kind: command, command: "test -f two.txt", timeoutSeconds: 900 }',
    ]);
    expect((await problemsOf(atLimit, 'timeout-beyond-function')).problems).toEqual([]);
  });
});

describe('the shipped examples', () => {
  it("local-demo's server step starts nothing that outlives it", async () => {
    const text = readFileSync(join(REPO, 'examples/local-demo.yaml'), 'utf8');
    const parsed = parsePlanText(text, { filename: 'local-demo.yaml' });
    if (!parsed.plan) throw new Error('local-demo does not parse');
    const result = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap });
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
  });
});
