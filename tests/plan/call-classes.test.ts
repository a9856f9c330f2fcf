/**
 * Every call sorted into read-only, destructive or unknown, whatever its tool (lib/plan/tools.ts
 * `classifyCall`, lib/plan/risks.ts `callClassification`), and what unattended approval may
 * answer (`unattendedApprovalRefusals`): only gates whose every call is proven read-only.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callClassification, planRisks, unattendedApprovalRefusals } from '../../lib/plan/risks.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { createToolRegistry } from '../../lib/plan/tools.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

const tools = createToolRegistry();
const effect = (tool: string, args: Record<string, unknown>) => callClassification(tool, args, tools).effect;

describe('calls of the built-in tools, classed', () => {
  it.each(['GET', 'HEAD', 'OPTIONS'])('http %s is read-only', (method) => {
    expect(effect('http', { method, url: 'https://example.com/x' })).toBe('read-only');
  });

  it.each(['POST', 'PUT', 'PATCH'])('http %s is of unknown effect, with the reason', (method) => {
    const classified = callClassification('http', { method, url: 'https://example.com/x' }, tools);
    expect(classified).toMatchObject({
      effect: 'unknown',
      unknown: [`HTTP ${method} https://example.com/x may change what it reaches`],
    });
  });

  it('http DELETE is destructive', () => {
    expect(effect('http', { method: 'DELETE', url: 'https://example.com/x' })).toBe('destructive');
  });

  it('lambda and agent calls are of unknown effect; echo and wait read-only', () => {
    expect(effect('lambda', { functionName: 'f' })).toBe('unknown');
    expect(callClassification('agent', { task: 'Fix it', agent: 'coder' }, tools).unknown[0]).toContain(
      'agent coder',
    );
    expect(effect('echo', { message: 'hi' })).toBe('read-only');
    expect(effect('wait', { seconds: 5 })).toBe('read-only');
  });

  it('a shell call is of its command; a step env of PATH, BASH_ENV or LD_PRELOAD makes it unknown', () => {
    expect(effect('shell', { command: 'ls -la' })).toBe('read-only');
    expect(effect('shell', { command: 'rm -rf out' })).toBe('destructive');
    for (const name of ['PATH', 'BASH_ENV', 'LD_PRELOAD', 'NODE_OPTIONS']) {
      const classified = callClassification('shell', { command: 'ls', env: { [name]: './bin' } }, tools);
      expect(classified.effect).toBe('unknown');
      expect(classified.unknown[0]).toContain(`the step's env sets ${name}`);
    }
    expect(effect('shell', { command: 'ls', env: { NODE_ENV: 'test' } })).toBe('read-only');
  });

  it("a team's tool that does not say which calls only read is of unknown effect; an unregistered one too", () => {
    const team = createToolRegistry([
      { name: 'deploy', description: 'Deploy', inputSchema: z.object({}), destructive: false },
    ]);
    expect(callClassification('deploy', {}, team).effect).toBe('unknown');
    expect(callClassification('nope', {}, team).unknown).toEqual(['the tool nope is not registered']);
  });
});

const plan = (
  steps: readonly Record<string, unknown>[],
  postconditions: readonly Record<string, unknown>[] = [],
) =>
  PlanSchema.parse({
    id: 'p',
    objective: 'Classify what unattended approval may answer',
    sizePolicy: { minSteps: 1 },
    steps,
    postconditions,
  });

const shell = (id: string, command: string, extra: Record<string, unknown> = {}) => ({
  id,
  description: `Run ${id}`,
  tool: 'shell',
  args: { command },
  ...extra,
});

describe('unattended approval (unattendedApprovalRefusals)', () => {
  it('answers a plan gate whose every call is proven read-only', () => {
    const risks = planRisks(
      plan([shell('look', 'ls -la', { contract: { kind: 'command', command: 'test -d .' } })]),
    );
    expect(unattendedApprovalRefusals(risks)).toEqual([]);
  });

  it('refuses a plan gate covering an ungated call of unknown effect, naming it', () => {
    const risks = planRisks(plan([shell('look', 'ls'), shell('build', 'npm run build')]));
    expect(unattendedApprovalRefusals(risks)).toEqual([
      'step build, effect unknown: `npm run build` `npm run` is not one of its read-only subcommands',
    ]);
  });

  it('refuses for a contract, a rollback or a postcondition of unknown effect, and for exfiltration', () => {
    const risks = planRisks(
      plan(
        [
          shell('a', 'ls', { contract: { kind: 'command', command: 'npm test' } }),
          shell('b', 'ls', { rollback: { tool: 'shell', args: { command: 'make undo' } } }),
          shell('c', 'cat ~/.ssh/id_rsa'),
        ],
        [
          {
            id: 'done',
            description: 'Done',
            contract: { kind: 'http', url: 'https://x.example', method: 'POST' },
          },
        ],
      ),
    );
    const refusals = unattendedApprovalRefusals(risks);
    expect(refusals.some((r) => r.startsWith('step a, effect unknown: contract: `npm test`'))).toBe(true);
    expect(refusals.some((r) => r.startsWith('step b, effect unknown: rollback: `make undo`'))).toBe(true);
    expect(
      refusals.some((r) => r.startsWith('step c, exfiltration: `cat ~/.ssh/id_rsa` reads SSH keys')),
    ).toBe(true);
    expect(refusals.some((r) => r.startsWith('postcondition done, effect unknown: HTTP POST'))).toBe(true);
  });

  it('leaves gated destructive and unknown steps to their own gates, which it never answers', () => {
    const risks = planRisks(
      plan([
        shell('clean', 'rm -rf out', { requiresApproval: true }),
        shell('build', 'make', { requiresApproval: true }),
        shell('look', 'ls', { requiresApproval: true }),
      ]),
    );
    expect(unattendedApprovalRefusals(risks)).toEqual([]);
    expect(unattendedApprovalRefusals(risks, 'clean')).toEqual([
      'step clean is destructive: `rm -rf out` deletes recursively',
    ]);
    expect(unattendedApprovalRefusals(risks, 'build')[0]).toMatch(/^step build, effect unknown: `make`/);
    expect(unattendedApprovalRefusals(risks, 'look')).toEqual([]);
    expect(unattendedApprovalRefusals(risks, 'missing')).toEqual(['the plan has no step "missing"']);
  });
});

describe('the validator and unknown calls', () => {
  it('lets a step of unknown effect go without its own gate (a person approves the plan instead)', async () => {
    const result = await validatePlan(
      plan([shell('build', 'npm run build', { contract: { kind: 'command', command: 'npm test' } })]),
    );
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
  });
});
