/**
 * The contract checker: the only thing that can complete a step. It runs a step's contract
 * (or a plan postcondition) in its own process or call, separate from the step, with a
 * timeout, and returns evidence of what ran and what came back.
 */
import type { LambdaClient } from '@aws-sdk/client-lambda';
import jsonata from 'jsonata';
import type { Contract } from '../../plan/schema.ts';
import type { CallValue, Evidence } from '../payloads/index.ts';
import { REDACTED, Redactor } from '../secrets/redact.ts';
import { type ReferenceScope, resolveReferences } from '../secrets/references.ts';
import type { SecretSource } from '../secrets/secrets.ts';
import { type FilledShellCommand, fillShellCommand, resolveShellCommand } from '../secrets/shell-command.ts';
import { resolveHttpRequest } from '../secrets/url-binding.ts';
import { type FailureFacts, failureFacts } from '../shared/errors.ts';
import { runProcess } from '../shared/process.ts';
import { DEFAULT_EXCERPT_BYTES, truncateText } from '../shared/truncate.ts';
import { sendHttp } from '../tools/http.ts';
import { invokeLambda } from '../tools/lambda.ts';

/** What the harness saw when it checked a contract; stored with TASK_COMPLETED / TASK_FAILED. */
export interface ContractEvidence extends Evidence {
  readonly kind: Contract['kind'] | 'none';
  /**
   * What ran: a command contract's text as bash ran it (each reference replaced by the variable
   * holding its value, so no value is in it: secrets/shell-command.ts); any other kind as written.
   */
  readonly ran: string;
  /** A command contract's run-time values, each with its variable (secrets redacted). */
  readonly values?: CallValue[];
  readonly exitCode?: number | null;
  readonly status?: number;
  /** The start of stdout (command), the body (http), the result (assert, lambda); redacted. */
  readonly excerpt: string;
  readonly durationMs: number;
  readonly passed: boolean;
  /** Why it did not pass, in one line. */
  readonly reason?: string;
  readonly timedOut?: boolean;
  /** A failed command's stderr (its end, redacted): what a retry's agent needs to fix the work. */
  readonly stderr?: string;
  /** Set when the check itself could not run (connection refused, bad expression). */
  readonly error?: { readonly name: string; readonly code?: string };
}

/** What a contract's JSONata assertion and custom checker see. */
export interface ContractScope {
  /** The step's tool output. */
  readonly output: unknown;
  readonly context: Readonly<Record<string, unknown>>;
  /** Outputs of earlier steps, by step id. */
  readonly steps: Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>>;
}

export interface ContractDeps {
  /** Needed by `lambda` contracts. */
  readonly lambda?: LambdaClient;
  /** For `${secrets.*}` inside contract commands, URLs and headers. */
  readonly secrets?: SecretSource;
  /** @default process.cwd() */
  readonly cwd?: string;
  /** Redacts excerpts and reasons; resolved secret values are added to it. */
  readonly redactor?: Redactor;
  /** @default DEFAULT_EXCERPT_BYTES */
  readonly excerptBytes?: number;
  /**
   * Time limit of `assert` contracts, which have no timeout field of their own.
   * @default 10_000
   */
  readonly assertTimeoutMs?: number;
}

/** Runs `contract` against `scope`; never throws for a failing or broken check (the evidence says why). */
export async function checkContract(
  contract: Contract,
  scope: ContractScope,
  deps: ContractDeps = {},
): Promise<ContractEvidence> {
  const checkedAt = new Date().toISOString();
  const ev = await runCheck(contract, scope, deps);
  return { ...ev, summary: summarize(ev), checkedAt };
}

/** One line for progress output and the TASK_COMPLETED evidence: `exit 0`, `HTTP 200`, `assert true`. */
function summarize(ev: Omit<ContractEvidence, 'summary' | 'checkedAt'>): string {
  const verdict = ev.passed ? 'passed' : `failed: ${ev.reason ?? 'did not pass'}`;
  switch (ev.kind) {
    case 'command':
      return ev.exitCode !== undefined && ev.exitCode !== null ? `exit ${ev.exitCode} (${verdict})` : verdict;
    case 'http':
    case 'lambda':
      return ev.status !== undefined ? `HTTP ${ev.status} (${verdict})` : verdict;
    default:
      return `${ev.kind} ${verdict}`;
  }
}

/** Evidence of a step with no contract: it completes when its runner succeeded. */
export function noContractEvidence(): ContractEvidence {
  return {
    kind: 'none',
    ran: 'no contract',
    excerpt: '',
    durationMs: 0,
    passed: true,
    summary: 'no contract: completed when the step ran',
    checkedAt: new Date().toISOString(),
  };
}

async function runCheck(
  contract: Contract,
  scope: ContractScope,
  deps: ContractDeps,
): Promise<Omit<ContractEvidence, 'summary' | 'checkedAt'>> {
  const started = performance.now();
  const refScope: ReferenceScope = { steps: scope.steps, context: scope.context, secrets: deps.secrets };
  const excerptBytes = deps.excerptBytes ?? DEFAULT_EXCERPT_BYTES;
  const redact = (text: string): string =>
    (deps.redactor ?? new Redactor()).with(deps.secrets?.resolvedValues ?? []).text(text);
  const excerpt = (text: string): string => redact(truncateText(text, excerptBytes).text);
  const elapsed = (): number => Math.round(performance.now() - started);
  const ran = redact(contractText(contract));
  let filled: FilledShellCommand | undefined;
  // A command's evidence: the text bash ran and its values, a secret's value never.
  const ranOf = (command: FilledShellCommand) => ({
    ran: redact(command.command),
    values: command.values.map((value) => ({
      ...value,
      value: value.ref.startsWith('${secrets.') ? REDACTED : redact(value.value),
    })),
  });
  try {
    switch (contract.kind) {
      case 'command': {
        filled = await resolveShellCommand(contract.command, refScope, 'contract.command');
        const result = await runProcess({
          command: filled.command,
          env: filled.env,
          cwd: contract.cwd ?? deps.cwd,
          timeoutMs: contract.timeoutSeconds * 1000,
          maxOutputBytes: excerptBytes * 8,
        });
        const exitOk = result.exitCode === contract.expectExitCode;
        const stdoutOk =
          contract.stdoutMatches === undefined || new RegExp(contract.stdoutMatches).test(result.stdout);
        const passed = !result.timedOut && exitOk && stdoutOk;
        const reason = result.timedOut
          ? `timed out after ${contract.timeoutSeconds}s`
          : !exitOk
            ? `exit code ${result.exitCode ?? result.signal}, expected ${contract.expectExitCode}${lastLine(result.stderr)}`
            : !stdoutOk
              ? `stdout does not match /${contract.stdoutMatches}/`
              : undefined;
        return {
          kind: 'command',
          ...ranOf(filled),
          exitCode: result.exitCode,
          excerpt: excerpt(result.stdout || result.stderr),
          durationMs: elapsed(),
          passed,
          ...(reason ? { reason: redact(reason) } : {}),
          ...(!passed && result.stderr ? { stderr: redact(tail(result.stderr, excerptBytes)) } : {}),
          ...(result.timedOut ? { timedOut: true } : {}),
        };
      }
      case 'http': {
        const request = (await resolveHttpRequest(
          { url: contract.url, headers: contract.headers, body: contract.body },
          refScope,
          'contract',
        )) as { url: string; headers: Record<string, string>; body?: string };
        const result = await sendHttp(
          { ...request, method: contract.method, maxBodyBytes: excerptBytes * 8 },
          contract.timeoutSeconds * 1000,
        );
        const statusOk = result.status === contract.expectStatus;
        const bodyOk =
          contract.bodyMatches === undefined || new RegExp(contract.bodyMatches).test(result.body);
        const reason = !statusOk
          ? `status ${result.status}, expected ${contract.expectStatus}`
          : !bodyOk
            ? `body does not match /${contract.bodyMatches}/`
            : undefined;
        return {
          kind: 'http',
          ran,
          status: result.status,
          excerpt: excerpt(result.body),
          durationMs: elapsed(),
          passed: statusOk && bodyOk,
          reason,
        };
      }
      case 'assert': {
        const timeoutMs = deps.assertTimeoutMs ?? 10_000;
        const value = await withTimeout(
          jsonata(contract.expression).evaluate({
            output: scope.output,
            context: scope.context,
            steps: scope.steps,
          }),
          timeoutMs,
        );
        const passed = value === true;
        return {
          kind: 'assert',
          ran,
          excerpt: excerpt(JSON.stringify(value) ?? 'undefined'),
          durationMs: elapsed(),
          passed,
          ...(passed
            ? {}
            : { reason: `expression evaluated to ${JSON.stringify(value) ?? 'undefined'}, not true` }),
        };
      }
      case 'lambda': {
        if (!deps.lambda)
          throw Object.assign(new Error('lambda contracts need a Lambda client'), { name: 'NotConfigured' });
        const payload = await resolveReferences(contract.payload, refScope, 'contract.payload');
        const out = await invokeLambda(
          deps.lambda,
          {
            functionName: contract.functionName,
            payload: {
              ...(payload as object),
              output: scope.output,
              context: scope.context,
              steps: scope.steps,
            },
          },
          AbortSignal.timeout(contract.timeoutSeconds * 1000),
        );
        const verdict = (out.result ?? {}) as { passed?: unknown; evidence?: unknown; reason?: unknown };
        const passed = !out.functionError && verdict.passed === true;
        const text = typeof verdict.evidence === 'string' ? verdict.evidence : JSON.stringify(out.result);
        const reason = out.functionError
          ? `checker failed (${out.functionError})`
          : passed
            ? undefined
            : typeof verdict.reason === 'string'
              ? verdict.reason
              : 'checker did not return passed: true';
        return {
          kind: 'lambda',
          ran,
          status: out.statusCode,
          excerpt: excerpt(text ?? ''),
          durationMs: elapsed(),
          passed,
          ...(reason ? { reason: redact(reason) } : {}),
        };
      }
    }
  } catch (error) {
    const facts = failureFacts(error);
    const timedOut = facts.name === 'TimeoutError' || facts.name === 'AbortError';
    return {
      kind: contract.kind,
      ...(filled ? ranOf(filled) : { ran }),
      excerpt: '',
      durationMs: elapsed(),
      passed: false,
      reason: redact(`${facts.name}: ${facts.message}`),
      ...(timedOut ? { timedOut: true } : {}),
      error: { name: facts.name, ...(facts.code ? { code: facts.code } : {}) },
    };
  }
}

/** The failure a non-passing contract reports to the classifier. */
export function contractFailure(evidence: ContractEvidence): FailureFacts {
  const base = {
    message: `contract ${evidence.kind} did not pass: ${evidence.reason ?? 'failed'}`,
    httpStatus: evidence.status,
    ...(typeof evidence.exitCode === 'number' ? { exitCode: evidence.exitCode } : {}),
  };
  if (evidence.timedOut) return { ...base, name: 'TimeoutError' };
  if (evidence.error)
    return {
      ...base,
      name: evidence.error.name,
      ...(evidence.error.code ? { code: evidence.error.code } : {}),
    };
  return { ...base, name: 'ContractFailed' };
}

/**
 * The `ran` evidence of `contract` must show when it ran with `values` (as the evidence recorded
 * them): a command filled in by `fillShellCommand`, any other kind as written. Undefined when the
 * values cannot fill the command (one is missing): no run of the approved contract recorded them.
 */
export function approvedRan(contract: Contract, values: readonly CallValue[] = []): string | undefined {
  if (contract.kind !== 'command') return new Redactor().text(contractText(contract));
  try {
    const filled = fillShellCommand(contract.command, new Map(values.map((v) => [v.ref, v.value])));
    return new Redactor().text(filled.command);
  } catch {
    return undefined;
  }
}

/** What a contract runs, as written in the plan (a command contract's evidence has it filled: `ran`). */
export function contractText(contract: Contract): string {
  switch (contract.kind) {
    case 'command':
      return contract.command;
    case 'http':
      return `${contract.method} ${contract.url}`;
    case 'assert':
      return contract.expression;
    case 'lambda':
      return `lambda ${contract.functionName}`;
  }
}

/** The last `bytes` of `text` (errors are at the end of stderr). */
function tail(text: string, bytes: number): string {
  const buffer = Buffer.from(text);
  return buffer.length <= bytes ? text : `…${buffer.subarray(buffer.length - bytes).toString()}`;
}

function lastLine(stderr: string): string {
  const line = stderr.trim().split('\n').pop();
  return line ? `: ${line}` : '';
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`assertion timed out after ${ms} ms`), { name: 'TimeoutError' })),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
