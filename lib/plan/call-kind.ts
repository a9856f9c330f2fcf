/**
 * Where a `${…}` reference may not go at all. A value known only at run time is data: it may
 * fill what a call sends, never decide what kind of call it is (the tool, the agent, the Lambda
 * function, the HTTP method, a header's name) or where a request goes (a URL's scheme, host,
 * port; see url-template.ts). The approver must be able to read those as written.
 */
import { referencesIn } from './references.ts';
import type { Contract, Plan } from './schema.ts';
import { pointerOf } from './source-map.ts';
import { AGENT_TOOL, stepInvocation } from './tools.ts';
import { FILLABLE_URL_PARTS, urlPartAdvice, urlReferencePlacements } from './url-template.ts';

export interface PositionProblem {
  readonly message: string;
  readonly pointer: string;
}

/** Every reference in a place that says what kind of call a step, rollback, contract or postcondition makes. */
export function referencePositionProblems(plan: Plan): PositionProblem[] {
  const problems: PositionProblem[] = [];
  const fixed = (value: unknown, pointer: string, what: string) => {
    if (typeof value !== 'string') return;
    const ref = referencesIn(value)[0];
    if (ref)
      problems.push({
        message: `${ref.raw}: ${what} may not be a reference: it says what kind of call this is, which the approver must read as written; write it literally`,
        pointer,
      });
  };
  const url = (value: unknown, pointer: string) => {
    if (typeof value !== 'string') return;
    for (const p of urlReferencePlacements(value))
      if (!FILLABLE_URL_PARTS.has(p.part))
        problems.push({ message: `${p.raw}: ${urlPartAdvice(p.part)}`, pointer });
  };
  const headerNames = (headers: unknown, pointer: string) => {
    if (headers === null || typeof headers !== 'object') return;
    for (const name of Object.keys(headers))
      fixed(name, `${pointer}${pointerOf([name])}`, `a header name ("${name}")`);
  };
  /** A tool call's own fields: what the built-in tools read as the kind of call. */
  const call = (tool: string, args: Record<string, unknown>, at: string) => {
    if (tool === AGENT_TOOL) fixed(args.agent, `${at}/agent`, 'the agent');
    if (tool === 'lambda') fixed(args.functionName, `${at}/functionName`, 'the Lambda function name');
    if (tool === 'http') {
      fixed(args.method, `${at}/method`, 'the HTTP method');
      headerNames(args.headers, `${at}/headers`);
      url(args.url, `${at}/url`);
    }
  };
  const contract = (c: Contract, at: string) => {
    if (c.kind === 'lambda') fixed(c.functionName, `${at}/functionName`, 'the Lambda function name');
    if (c.kind === 'http') {
      headerNames(c.headers, `${at}/headers`);
      url(c.url, `${at}/url`);
    }
  };

  plan.steps.forEach((step, i) => {
    const at = `/steps/${i}`;
    fixed(step.tool, `${at}/tool`, 'the tool');
    fixed(step.target, `${at}/target`, 'the agent target');
    const invocation = stepInvocation(step);
    // The agent tool's `agent` comes from `target` unless args name it; `target` was checked above.
    if (invocation)
      call(
        invocation.tool,
        invocation.tool === AGENT_TOOL ? { ...invocation.args, agent: step.args.agent } : invocation.args,
        `${at}/args`,
      );
    if (step.contract) contract(step.contract, `${at}/contract`);
    if (step.rollback) {
      fixed(step.rollback.tool, `${at}/rollback/tool`, 'the rollback tool');
      call(step.rollback.tool, step.rollback.args, `${at}/rollback/args`);
      if (step.rollback.contract) contract(step.rollback.contract, `${at}/rollback/contract`);
    }
  });
  plan.postconditions.forEach((pc, i) => {
    contract(pc.contract, `/postconditions/${i}/contract`);
  });
  return problems;
}
