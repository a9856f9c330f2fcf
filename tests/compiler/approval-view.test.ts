/**
 * The approval view (lib/runtime/gate/approval-view.ts): every field a step's approvers must see,
 * `${steps.x.y}` references marked as filled at run time, secrets by name only, the cut to fit
 * the gate request, and its place in the compiled definition (the plan gate's summary, each step
 * gate's request) where the definition budget counts it.
 */
import { describe, expect, it } from 'vitest';
import { compilePlan, SUMMARY_LIMIT_BYTES } from '../../lib/compiler/compile.ts';
import { type PlanInput, PlanSchema } from '../../lib/plan/schema.ts';
import {
  approvalView,
  fitApprovalView,
  STEP_GATE_VIEW_LIMIT_BYTES,
  stepGateView,
  VIEW_LIMIT_BYTES,
} from '../../lib/runtime/gate/approval-view.ts';
import { ApprovalViewSchema, type StepView } from '../../lib/runtime/payloads/index.ts';

const SECRET_REF = 'PLANGATE_VIEW_TEST_TOKEN_VARIABLE';

const PLAN: PlanInput = {
  id: 'view-test',
  objective: 'Every kind of call an approver must read',
  secrets: [{ name: 'api_token', source: 'env', ref: SECRET_REF }],
  budget: { wallClockSeconds: 600, costUsd: 2 },
  steps: [
    {
      id: 'make-dir',
      description: 'Create the directory',
      tool: 'shell',
      args: { command: 'mkdir -p out && find out -delete', cwd: 'work', env: { MODE: 'fast' } },
      outputs: ['dir'],
      contract: { kind: 'command', command: 'test ! -e out', stdoutMatches: '^$' },
      rollback: {
        tool: 'shell',
        args: { command: 'rmdir out-rollback' },
        contract: { kind: 'command', command: 'test ! -d out-rollback' },
      },
      onFail: { retries: 3, escalation: 'abort' },
      timeoutSeconds: 120,
    },
    {
      id: 'cleanup',
      description: 'Remove the scratch directory tmpdir recursively',
      dependsOn: ['make-dir'],
      tool: 'shell',
      args: { command: 'rm -rf ./tmpdir/${steps.make-dir.dir}', env: { TOKEN: '${secrets.api_token}' } },
      requiresApproval: true,
      contract: { kind: 'assert', expression: 'steps.`make-dir`.status = "completed"' },
    },
    {
      id: 'call-api',
      description: 'Tell the API',
      dependsOn: ['cleanup'],
      tool: 'http',
      args: {
        method: 'POST',
        url: 'https://api.example.test/done?dir=${steps.make-dir.dir}',
        headers: { Authorization: 'Bearer ${secrets.api_token}', 'Content-Type': 'application/json' },
        body: { ok: true },
      },
      contract: { kind: 'http', url: 'https://api.example.test/status', expectStatus: 204 },
      critical: false,
    },
    {
      id: 'invoke',
      description: 'Invoke the function',
      dependsOn: ['cleanup'],
      tool: 'lambda',
      args: { functionName: 'arn:aws:lambda:eu-west-1:123456789012:function:notify', payload: { n: 1 } },
      contract: { kind: 'lambda', functionName: 'checker', payload: { want: 1 } },
    },
    {
      id: 'review',
      description: 'Review the result',
      dependsOn: ['cleanup'],
      target: 'reviewer',
      task: 'Read out/ and write review.md',
      contract: { kind: 'command', command: 'test -f review.md' },
    },
    { id: 'pause', description: 'Wait a little', dependsOn: ['review'], tool: 'wait', args: { seconds: 5 } },
    { id: 'say', description: 'Say done', dependsOn: ['pause'], tool: 'echo', args: { message: 'done' } },
    {
      id: 'sign-off',
      description: 'A person signs off',
      dependsOn: ['say'],
      requiresHuman: true,
      outputs: ['signer'],
    },
  ],
  postconditions: [
    {
      id: 'no-tmpdir',
      description: 'tmpdir is gone',
      contract: { kind: 'command', command: 'test ! -d tmpdir' },
    },
  ],
};

const plan = PlanSchema.parse(PLAN);

/** The plan gate's summary as the compiled Start state assigns it (a JSONata literal). */
function compiledSummary(definitions: ReturnType<typeof compilePlan>['definitions']) {
  const main = definitions[0]?.asl as { States: Record<string, { Assign?: Record<string, string> }> };
  const literal = String(main.States.Start?.Assign?.summary);
  return JSON.parse(
    literal
      .replace(/^\{% /, '')
      .replace(/ %\}$/, '')
      .replace(/\\u0024/g, '$'),
  );
}
const stepOf = (view: { steps: StepView[] }, id: string) => view.steps.find((s) => s.id === id) as StepView;

describe('approvalView', () => {
  const view = approvalView(plan);

  it('is valid by its own schema and lists every step in plan order', () => {
    expect(ApprovalViewSchema.parse(view)).toEqual(view);
    expect(view.steps.map((s) => s.id)).toEqual(plan.steps.map((s) => s.id));
    expect(view.truncated).toBeUndefined();
  });

  it('shows a shell step: the exact command, its other args, contract, rollback, timeout, recovery, outputs', () => {
    expect(stepOf(view, 'make-dir')).toEqual({
      id: 'make-dir',
      description: 'Create the directory',
      tool: 'shell',
      // The harness reads the command itself: the prose says "Create", the command deletes.
      risks: {
        destructive: ['`find out -delete` deletes the files it finds (-delete)'],
        contract: [],
        rollback: [],
        // `rmdir` is not on the allow-list of read-only programs: its effect is unknown.
        unknown: [
          'rollback: `rmdir out-rollback` runs rmdir, which is not on the list of read-only programs',
        ],
        ownGate: false,
      },
      call: {
        form: 'command',
        text: 'mkdir -p out && find out -delete',
        details: [
          { label: 'cwd', value: 'work' },
          { label: 'env', value: 'MODE=fast', code: true },
        ],
      },
      contract: {
        form: 'command',
        text: 'test ! -e out',
        expect: 'exit 0, stdout matches /^$/',
        details: [{ label: 'timeout', value: '60 s' }],
      },
      rollback: {
        tool: 'shell',
        call: { form: 'command', text: 'rmdir out-rollback' },
        contract: {
          form: 'command',
          text: 'test ! -d out-rollback',
          expect: 'exit 0',
          details: [{ label: 'timeout', value: '60 s' }],
        },
      },
      timeoutSeconds: 120,
      // onFail: 3 retries of contract (logic) and unclassified failures, then abort for every class.
      recovery: [
        { classes: ['transient'], retries: 2, escalation: 'abort' },
        { classes: ['permission', 'invalid_input', 'unrecoverable'], retries: 0, escalation: 'abort' },
        { classes: ['logic', 'unknown'], retries: 3, escalation: 'abort' },
      ],
      requiresApproval: false,
      requiresHuman: false,
      critical: true,
      outputs: ['dir'],
      dependsOn: [],
    });
  });

  it('marks each ${steps.x.y} reference as filled at run time from step x, and the harness-computed risks', () => {
    const cleanup = stepOf(view, 'cleanup');
    expect(cleanup.call).toMatchObject({
      form: 'command',
      text: 'rm -rf ./tmpdir/${steps.make-dir.dir}',
      details: [{ label: 'env', value: 'TOKEN=${secrets.api_token}', code: true }],
      references: [{ raw: '${steps.make-dir.dir}', step: 'make-dir', output: 'dir' }],
    });
    expect(cleanup.contract).toEqual({
      form: 'assert',
      text: 'steps.`make-dir`.status = "completed"',
      expect: 'true',
    });
    expect(cleanup.risks.destructive.length).toBeGreaterThan(0);
    expect(cleanup.risks.ownGate).toBe(true);
    expect(cleanup.requiresApproval).toBe(true);
    expect(cleanup.dependsOn).toEqual(['make-dir']);
  });

  it('shows http as METHOD URL with header names only and the body, lambda, agent, wait and echo by their main argument', () => {
    expect(stepOf(view, 'call-api')).toMatchObject({
      tool: 'http',
      critical: false,
      call: {
        form: 'request',
        text: 'POST https://api.example.test/done?dir=${steps.make-dir.dir}',
        details: [
          { label: 'headers', value: 'Authorization, Content-Type' },
          { label: 'body', value: '{"ok":true}', code: true },
        ],
        references: [{ raw: '${steps.make-dir.dir}', step: 'make-dir', output: 'dir' }],
      },
      contract: { form: 'request', text: 'GET https://api.example.test/status', expect: 'HTTP 204' },
    });
    expect(JSON.stringify(stepOf(view, 'call-api'))).not.toContain('Bearer');
    expect(stepOf(view, 'invoke')).toMatchObject({
      call: {
        form: 'function',
        text: 'arn:aws:lambda:eu-west-1:123456789012:function:notify',
        details: [{ label: 'payload', value: '{"n":1}', code: true }],
      },
      contract: {
        form: 'function',
        text: 'checker',
        details: [
          { label: 'payload', value: '{"want":1}', code: true },
          { label: 'timeout', value: '60 s' },
        ],
      },
    });
    expect(stepOf(view, 'review')).toMatchObject({
      tool: 'agent',
      target: 'reviewer',
      call: { form: 'task', text: 'Read out/ and write review.md' },
    });
    expect(stepOf(view, 'review').call?.details).toBeUndefined();
    expect(stepOf(view, 'pause').call).toEqual({ form: 'wait', text: '5 seconds' });
    expect(stepOf(view, 'say').call).toEqual({ form: 'message', text: 'done' });
    expect(stepOf(view, 'sign-off')).toMatchObject({
      tool: 'human',
      requiresHuman: true,
      outputs: ['signer'],
    });
    expect(stepOf(view, 'sign-off').call).toBeUndefined();
  });

  it('shows any other tool’s args as canonical JSON', () => {
    const custom = PlanSchema.parse({
      ...PLAN,
      steps: [{ id: 'deploy', description: 'Deploy', tool: 'team-deploy', args: { z: 1, a: ['x'] } }],
      postconditions: [],
    });
    expect(approvalView(custom).steps[0]?.call).toEqual({ form: 'json', text: '{"a":["x"],"z":1}' });
  });

  it('lists the postconditions with their checks, the budget, and secrets by name only', () => {
    expect(view.postconditions).toEqual([
      {
        id: 'no-tmpdir',
        description: 'tmpdir is gone',
        contract: {
          form: 'command',
          text: 'test ! -d tmpdir',
          expect: 'exit 0',
          details: [{ label: 'timeout', value: '60 s' }],
        },
        risks: [],
      },
    ]);
    expect(view.budget).toEqual({ wallClockSeconds: 600, costUsd: 2 });
    expect(view.secrets).toEqual(['api_token']);
    // Where the value lives is not shown either.
    expect(JSON.stringify(view)).not.toContain(SECRET_REF);
  });

  it('names a secret that is referenced but not declared', () => {
    const undeclared = PlanSchema.parse({
      ...PLAN,
      secrets: [],
      steps: [
        { id: 'a', description: 'A', tool: 'shell', args: { command: 'curl -H "x: ${secrets.other}" x' } },
      ],
      postconditions: [],
    });
    expect(approvalView(undeclared).secrets).toEqual(['other']);
  });
});

describe('fitApprovalView', () => {
  const big = PlanSchema.parse({
    id: 'big',
    objective: 'Many long commands',
    steps: Array.from({ length: 60 }, (_, i) => ({
      id: `s${i}`,
      description: `Step ${i}`,
      tool: 'shell',
      args: { command: `echo ${String(i).padStart(3, '0')} ${'x'.repeat(4000)}` },
      ...(i === 50
        ? { args: { command: `rm -rf ./dir${i} ${'y'.repeat(4000)}` }, requiresApproval: true }
        : {}),
    })),
  });
  const whole = approvalView(big);
  const limit = 64 * 1024;
  const fitted = fitApprovalView(whole, limit);

  it('stays within the limit, keeps every step’s id, description, tool and risks, and says how many commands it shows', () => {
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(limit);
    expect(fitted.steps.map((s) => [s.id, s.description, s.tool, s.risks])).toEqual(
      whole.steps.map((s) => [s.id, s.description, s.tool, s.risks]),
    );
    const shown = fitted.steps.filter((s) => s.call !== undefined);
    expect(fitted.truncated).toEqual({ shown: shown.length, listed: 60, total: 60 });
    expect(shown.length).toBeGreaterThan(5);
    expect(shown.length).toBeLessThan(60);
    for (const step of fitted.steps.filter((s) => s.call === undefined))
      expect(step.detailsOmitted).toBe(true);
  });

  it('shows a risky step’s command before the harmless ones', () => {
    expect(fitted.steps[50]?.call?.text).toMatch(/^rm -rf \.\/dir50 /);
    expect(fitted.steps[59]?.call).toBeUndefined();
  });

  it('returns a view that fits unchanged', () => {
    expect(fitApprovalView(whole, 10 * 1024 * 1024)).toBe(whole);
  });

  it('lists only the first steps when even their ids and descriptions do not fit', () => {
    const tiny = fitApprovalView(whole, 4 * 1024);
    expect(Buffer.byteLength(JSON.stringify(tiny))).toBeLessThanOrEqual(4 * 1024);
    expect(tiny.truncated?.total).toBe(60);
    expect(tiny.truncated?.listed).toBe(tiny.steps.length);
    expect(tiny.steps.length).toBeLessThan(60);
  });

  it('cuts a step gate’s view of a huge step to its id, description, tool and risks', () => {
    const huge = {
      ...(whole.steps[0] as StepView),
      call: { form: 'command' as const, text: 'z'.repeat(40_000) },
    };
    expect(stepGateView(huge).detailsOmitted).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(stepGateView(huge)))).toBeLessThan(STEP_GATE_VIEW_LIMIT_BYTES);
    expect(stepGateView(whole.steps[1] as StepView)).toBe(whole.steps[1]);
  });
});

describe('the compiled definition', () => {
  it('holds the view in the plan gate summary and each step gate’s request, bound to the plan digest', () => {
    const { definitions } = compilePlan(plan);
    const summary = compiledSummary(definitions);
    expect(summary.view).toEqual(approvalView(plan));
    const all = definitions.map((d) => d.json).join('\n');
    // The step gate of `cleanup` carries its step's view (with the ledger entry it reads).
    expect(all).toContain('rm -rf ./tmpdir/\\\\u0024{steps.make-dir.dir}');
  });

  it('keeps the whole summary within its limit and counts its UTF-8 bytes in the definition budget', () => {
    const wide = PlanSchema.parse({
      id: 'wide',
      objective: 'Large and non-ASCII',
      steps: Array.from({ length: 120 }, (_, i) => ({
        id: `s${i}`,
        description: `Étape ${i} — créer le répertoire`,
        tool: 'shell',
        args: { command: `echo ${'é'.repeat(1500)}` },
      })),
    });
    const { definitions } = compilePlan(wide, { maxDefinitionBytes: 900_000 });
    const summary = compiledSummary(definitions);
    expect(Buffer.byteLength(JSON.stringify(summary))).toBeLessThanOrEqual(SUMMARY_LIMIT_BYTES);
    expect(Buffer.byteLength(JSON.stringify(summary.view))).toBeLessThanOrEqual(VIEW_LIMIT_BYTES);
    expect(summary.view.truncated.total).toBe(120);
    for (const d of definitions) expect(Buffer.byteLength(d.json)).toBeLessThanOrEqual(1_000_000);
  });
});
