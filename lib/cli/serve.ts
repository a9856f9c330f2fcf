/**
 * `plangate serve`: the Plans API and the Approvals API on 127.0.0.1, over the local stack, with
 * the authorizers of the AWS deployment (SigV4 for plans, a JWT for answers). Prints the API's URL
 * as the first line of stdout and serves until SIGTERM/SIGINT.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { LocalHostedUi } from '../aws-local/api-gateway/hosted-ui.ts';
import type { JwtAuthorizerConfig } from '../aws-local/api-gateway/jwt.ts';
import { LocalIssuer } from '../aws-local/api-gateway/local-issuer.ts';
import { type AdmissionLimits, DEFAULT_ADMISSION } from '../aws-local/api-gateway/server.ts';
import type { LocalPrincipal } from '../aws-local/api-gateway/sigv4.ts';
import { describeStoreError } from '../engine/persistence/store-faults.ts';
import type { DraftItem } from '../launch/plan-drafts.ts';
import type { PlannerProvider } from '../planner/provider.ts';
import { providerFrom } from '../planner/providers.ts';
import { sandboxSentence } from '../runtime/sandbox/sandbox.ts';
import { claimStore } from '../serve/local-stack.ts';
import { LocalPlatform, type PlatformIdentity } from '../serve/platform.ts';
import {
  DEFAULT_STORE_DESCRIPTION,
  releaseSession,
  type StorePaths,
  storePaths,
  writeSession,
  writeStorePolicy,
} from '../serve/store-directory.ts';
import { loadPolicyOption, POLICY_OPTION_HELP } from './policy.ts';
import { untilSignal } from './signals.ts';

export const usage = `Usage: plangate serve [options]

Serves plangate's HTTP API on 127.0.0.1 over the local stack (engine, DynamoDB, event bus, the
harness Lambdas): POST /plans, GET /plans/{id}, GET /executions/{id}/events and /progress (SSE),
GET /openapi.json, and the approval pages and answers under /approvals/{id}. The first line of
output is the API's URL; every gate waiting for a person is printed with its approval link.

Identity, as on AWS (default --identity aws):
  plan routes     SigV4 (service execute-api, region us-east-1) with a key of --credentials;
                  without --credentials, <store>/credentials.json (created on first use)
  answering       a JWT from --jwt-issuer, checked against --jwks and --jwt-audience
  --identity header  no authorizer: the x-plangate-user header names the caller, and it is
                  believed only from loopback

Every endpoint answers only its own names: a request whose Host is not 127.0.0.1:PORT or
localhost:PORT, or whose Origin is another site's (or null), is refused with 403 (a web page
rebinding its domain to 127.0.0.1 cannot use the API; see docs/api.md).

Options:
  --port N              port (default 0: any free port)
  --store DIR           local store (default: ${DEFAULT_STORE_DESCRIPTION})
  --identity aws|header how callers are identified (default aws)
  --credentials FILE    JSON [{accessKeyId, secretAccessKey, arn}] of the principals that may sign
  --jwt-issuer URL      issuer of approvers' JWTs (with --jwks and --jwt-audience)
  --jwt-audience ID     accepted audience / client id; repeatable
  --jwks FILE           the issuer's JSON Web Key Set
  --sign-in-users FILE  a local stand-in for the approvers' Cognito hosted UI (authorization code
                        + PKCE, as on AWS) with the users of FILE, JSON {"<email>": "<password>"}
                        or {"<email>": {"password": "…", "groups": ["sre"]}} (their ID tokens'
                        cognito:groups, which the policy reads):
                        a shared approval link asks its reader to sign in, and answers carry the
                        ID token it issues (instead of --jwt-issuer; printed: its URL)
  --time-scale X        multiply Wait, retry and gate-timeout durations (default 1)
  --mail-dir DIR        where approval emails are written as .eml files, one per approver
                        with that approver's own link (default <store>/mail)
  --max-in-flight N     requests handled at once (default ${DEFAULT_ADMISSION.maxInFlight})
  --max-queued N        requests waiting for one of those places, in arrival order (default
                        ${DEFAULT_ADMISSION.maxQueued}); beyond both a request is answered 503 with Retry-After: 1
${POLICY_OPTION_HELP}

Slack: with PLANGATE_SLACK_BOT_TOKEN, PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL and
PLANGATE_SLACK_APPROVERS (<Slack user id>=<approver>,…) set (PLANGATE_SLACK_API_URL for a test
server), each gate is also posted to Slack, its buttons are answered at /slack/interactions, and
a decision made anywhere shows in the message.

Planner (POST /plans {"goal": "…"}: answered 202, drafted in the background, GET /drafts/{id}):
  --model ID            the model that drafts plans (default: PLANGATE_PLANNER_MODEL; without
                        either, goals are refused with 501)
  --provider NAME       bedrock or openai (as plangate plan)
  --base-url URL        an OpenAI-compatible server (Ollama, vLLM, llama.cpp)
  --max-rounds N        validator rounds per draft (default 4)
  -h, --help            show this help

SIGTERM or Ctrl-C stops it without losing what it accepted: new requests are answered 503 with
Retry-After, the requests and harness calls under way end (calls at most 10 s), and every plan
not ended resumes at the next start on the same store; a second signal ends it at once.

One server per store: another one started on a held store exits 1 with one line naming the
holder. While the store cannot be written (disk full, read-only file system) new work is answered
503 with the cause, the fix and Retry-After, and taken again once a write succeeds.

Exit codes: 0 stopped by a signal, 1 could not start (or could not close its store), 2 usage error.`;

const PrincipalsSchema = z
  .array(
    z.strictObject({
      accessKeyId: z.string().min(1),
      secretAccessKey: z.string().min(8),
      arn: z.string().min(1),
    }),
  )
  .min(1);
const PasswordSchema = z.string().min(8, 'a password of at least 8 characters');
/**
 * `--sign-in-users`: who may sign in locally, email → password, or → `{password, groups}` (the
 * user pool groups their ID token's `cognito:groups` claim carries, as Cognito's would).
 */
const SignInUsersSchema = z.record(
  z.email(),
  z.union([
    PasswordSchema,
    z.strictObject({ password: PasswordSchema, groups: z.array(z.string().min(1)).default([]) }),
  ]),
);
/** The approval page's public app client (the ID tokens' audience), as on AWS. */
export const LOCAL_SIGN_IN_CLIENT_ID = 'plangate-approval-page';
const JwksSchema = z.object({
  keys: z.array(z.looseObject({ kty: z.string(), kid: z.string().optional() })),
});

interface ServeOptions {
  readonly port: number;
  readonly paths: StorePaths;
  readonly identity: 'aws' | 'header';
  readonly credentialsFile?: string;
  readonly jwt?: { issuer: string; audience: string[]; jwksFile: string };
  readonly signInUsersFile?: string;
  readonly timeScale: number;
  readonly admission: AdmissionLimits;
  readonly mailDir: string;
  readonly policyDir?: string;
  readonly planner?: { provider?: string; model?: string; baseUrl?: string; maxRounds: number };
}

function parseServeOptions(argv: string[]): ServeOptions | string {
  let values: ReturnType<typeof options>['values'];
  try {
    values = options(argv).values;
  } catch (error) {
    return (error as Error).message;
  }
  const port = Number(values.port ?? '0');
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    return `--port must be 0–65535, not "${values.port}"`;
  const timeScale = Number(values['time-scale'] ?? '1');
  if (!Number.isFinite(timeScale) || timeScale < 0) return `--time-scale must be a number >= 0`;
  const maxInFlight = Number(values['max-in-flight'] ?? DEFAULT_ADMISSION.maxInFlight);
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1)
    return `--max-in-flight must be a positive integer, not "${values['max-in-flight']}"`;
  const maxQueued = Number(values['max-queued'] ?? DEFAULT_ADMISSION.maxQueued);
  if (!Number.isInteger(maxQueued) || maxQueued < 0)
    return `--max-queued must be an integer >= 0, not "${values['max-queued']}"`;
  const identity = values.identity ?? 'aws';
  if (identity !== 'aws' && identity !== 'header')
    return `--identity must be aws or header, not "${identity}"`;
  const jwtGiven = [values['jwt-issuer'], values.jwks, values['jwt-audience']?.length ? 'x' : undefined];
  if (jwtGiven.some((v) => v !== undefined) && jwtGiven.some((v) => v === undefined))
    return '--jwt-issuer, --jwks and --jwt-audience go together';
  const maxRounds = Number(values['max-rounds'] ?? 4);
  if (!Number.isInteger(maxRounds) || maxRounds < 1) return '--max-rounds must be a positive integer';
  if (identity === 'header' && (values.credentials || values['jwt-issuer'] || values['sign-in-users']))
    return '--identity header takes no --credentials, JWT or sign-in options';
  if (values['sign-in-users'] && values['jwt-issuer'])
    return '--sign-in-users issues its own JWTs: give it or --jwt-issuer, not both';
  return {
    port,
    paths: storePaths(values.store),
    identity,
    ...(values.credentials ? { credentialsFile: values.credentials } : {}),
    ...(values['jwt-issuer'] && values.jwks
      ? {
          jwt: {
            issuer: values['jwt-issuer'],
            audience: values['jwt-audience'] ?? [],
            jwksFile: values.jwks,
          },
        }
      : {}),
    ...(values['sign-in-users'] ? { signInUsersFile: values['sign-in-users'] } : {}),
    timeScale,
    admission: { maxInFlight, maxQueued },
    mailDir: values['mail-dir'] ?? join(storePaths(values.store).root, 'mail'),
    policyDir: values.policy,
    ...plannerOptions(values),
  };
}

function plannerOptions(values: ReturnType<typeof options>['values']): Pick<ServeOptions, 'planner'> {
  if (!values.model && !process.env.PLANGATE_PLANNER_MODEL) return {};
  return {
    planner: {
      ...(values.provider ? { provider: values.provider } : {}),
      ...(values.model ? { model: values.model } : {}),
      ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
      maxRounds: Number(values['max-rounds'] ?? 4),
    },
  };
}

function options(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      store: { type: 'string' },
      identity: { type: 'string' },
      credentials: { type: 'string' },
      'jwt-issuer': { type: 'string' },
      'sign-in-users': { type: 'string' },
      'jwt-audience': { type: 'string', multiple: true },
      jwks: { type: 'string' },
      'time-scale': { type: 'string' },
      'mail-dir': { type: 'string' },
      'max-in-flight': { type: 'string' },
      'max-queued': { type: 'string' },
      model: { type: 'string' },
      provider: { type: 'string' },
      'base-url': { type: 'string' },
      'max-rounds': { type: 'string' },
      policy: { type: 'string' },
    },
  });
}

/** The principals of --credentials, or this store's own (one, with a random secret, made once). */
async function loadPrincipals(
  file: string | undefined,
  paths: StorePaths,
): Promise<{ principals: LocalPrincipal[]; file: string }> {
  const path = file ?? join(paths.root, 'credentials.json');
  try {
    return { principals: PrincipalsSchema.parse(JSON.parse(await readFile(path, 'utf8'))), file: path };
  } catch (error) {
    if (file !== undefined || (error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(
        `${path}: ${error instanceof z.ZodError ? z.prettifyError(error) : (error as Error).message}`,
      );
  }
  const own: LocalPrincipal = {
    accessKeyId: 'PLANGATELOCAL',
    secretAccessKey: randomBytes(24).toString('base64url'),
    arn: `arn:aws:iam::123456789012:user/${userInfo().username}`,
  };
  await mkdir(paths.root, { recursive: true });
  await writeFile(path, `${JSON.stringify([own], null, 2)}\n`, { mode: 0o600 });
  return { principals: [own], file: path };
}

async function platformIdentity(
  opts: ServeOptions,
): Promise<{ identity: PlatformIdentity; notes: string[]; signIn?: LocalHostedUi }> {
  if (opts.identity === 'header')
    return { identity: { mode: 'header' }, notes: ['identity: x-plangate-user header, from loopback only'] };
  const { principals, file } = await loadPrincipals(opts.credentialsFile, opts.paths);
  let jwt: JwtAuthorizerConfig | undefined;
  let signIn: LocalHostedUi | undefined;
  let signInUsers = 0;
  if (opts.jwt) {
    const jwks = JwksSchema.parse(JSON.parse(await readFile(opts.jwt.jwksFile, 'utf8')));
    jwt = { issuer: opts.jwt.issuer, audience: opts.jwt.audience, jwks };
  } else if (opts.signInUsersFile) {
    const users = SignInUsersSchema.safeParse(JSON.parse(await readFile(opts.signInUsersFile, 'utf8')));
    if (!users.success) {
      const issue = users.error.issues[0];
      throw new Error(`${opts.signInUsersFile}: ${issue?.path.join('.') || 'users'}: ${issue?.message}`);
    }
    signInUsers = Object.keys(users.data).length;
    const issuer = new LocalIssuer();
    const entries = Object.entries(users.data);
    signIn = await LocalHostedUi.start({
      issuer,
      clientId: LOCAL_SIGN_IN_CLIENT_ID,
      users: Object.fromEntries(
        entries.map(([email, user]) => [email, typeof user === 'string' ? user : user.password]),
      ),
      groups: Object.fromEntries(
        entries.map(([email, user]) => [email, typeof user === 'string' ? [] : user.groups]),
      ),
    });
    jwt = { issuer: issuer.issuer, audience: [LOCAL_SIGN_IN_CLIENT_ID], jwks: issuer.jwks };
  }
  return {
    identity: { mode: 'aws', principals, jwt },
    notes: [
      `plan routes: SigV4 (execute-api, us-east-1) with the keys in ${file}`,
      signIn
        ? `answers: signed in at ${signIn.url} (${signInUsers} users of ${opts.signInUsersFile})`
        : jwt
          ? `answers: JWTs of ${jwt.issuer}`
          : 'answers: through emailed (recipient-bound) links only; no --jwt-issuer or --sign-in-users',
    ],
    signIn,
  };
}

export async function run(argv: string[]): Promise<number> {
  const opts = parseServeOptions(argv);
  if (typeof opts === 'string') {
    process.stderr.write(`plangate serve: ${opts}\n\n${usage}\n`);
    return 2;
  }
  let provider: PlannerProvider | undefined;
  try {
    if (opts.planner) provider = providerFrom(opts.planner);
  } catch (error) {
    process.stderr.write(`plangate serve: ${(error as Error).message}\n`);
    return 2;
  }
  const policy = await loadPolicyOption(opts.policyDir, 'serve');
  if (!policy) return 2;
  let platform: LocalPlatform;
  let notes: string[];
  let signIn: LocalHostedUi | undefined;
  try {
    // Before anything in the store is read or made (its credentials, its keys): of servers started
    // on one store at once, one goes on and every other refuses, naming the holder.
    await claimStore(opts.paths, 'plangate serve');
    const configured = await platformIdentity(opts);
    notes = configured.notes;
    signIn = configured.signIn;
    platform = await LocalPlatform.start({
      paths: opts.paths,
      identity: configured.identity,
      policy,
      signIn,
      port: opts.port,
      timeScale: opts.timeScale,
      admission: opts.admission,
      mailDir: opts.mailDir,
      ...(provider && opts.planner
        ? {
            planner: {
              provider,
              maxRounds: opts.planner.maxRounds,
              onDraft: (draftId, outcome) => process.stdout.write(`${draftLine(draftId, outcome)}\n`),
            },
          }
        : {}),
      // The operator is told what is wrong and what fixes it, and when it is fixed.
      onStoreFault: (fault) =>
        process.stderr.write(
          fault
            ? `plangate serve: the store cannot be written (${fault.advice}); new work is answered 503 until it can\n`
            : 'plangate serve: the store can be written again; new work is taken\n',
        ),
      onGate: (notice, link, emails) => {
        process.stdout.write(
          `gate ${notice.kind}${notice.stepId ? ` ${notice.stepId}` : ''} of ${notice.plan.id} v${notice.plan.version} waits: ${link}\n`,
        );
        for (const file of emails) process.stdout.write(`  email: ${file}\n`);
      },
    });
  } catch (error) {
    await signIn?.close();
    process.stderr.write(`plangate serve: could not start: ${describeStoreError(error)}\n`);
    return 1;
  }
  // Announced like a `run` session, so status, events, audit and files read through this
  // process's endpoints instead of opening the database it holds.
  try {
    await writeStorePolicy(opts.paths, policy.dir);
    await writeSession(opts.paths, {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dynamoEndpoint: platform.stack.data.dynamo.endpoint,
      eventsEndpoint: platform.stack.data.bus.endpoint,
      sfnEndpoint: platform.stack.engineServer.url,
      approvalUrl: platform.url,
    });
  } catch (error) {
    process.stderr.write(`plangate serve: could not start: ${describeStoreError(error)}\n`);
    await platform.close().catch(() => undefined);
    await signIn?.close();
    return 1;
  }
  // Listening for the stop before the URL is printed: whoever reads the URL may stop it at once.
  const stopped = untilSignal();
  process.stdout.write(`${platform.url}\n`);
  for (const note of notes) process.stdout.write(`${note}\n`);
  process.stdout.write(
    provider
      ? `planner: ${provider.name} ${provider.model} (POST /plans {"goal": "…"})\n`
      : 'planner: none (goals are refused; pass --model to draft plans from goals)\n',
  );
  process.stdout.write(`policy: ${policy.policies.length} policies of ${policy.dir}\n`);
  process.stdout.write(`store: ${opts.paths.root}\n`);
  process.stdout.write(`${sandboxSentence()}\n`);
  process.stdout.write(`OpenAPI: ${platform.url}/openapi.json\n`);
  const signal = await stopped;
  process.stderr.write(
    `plangate serve: ${signal}: stopping; finishing what is under way (a second signal ends it at once)\n`,
  );
  try {
    await releaseSession(opts.paths);
    await platform.close();
  } catch (error) {
    // e.g. a store that still cannot be written: what is written stays for the next start
    process.stderr.write(
      `plangate serve: stopped, but could not close the store: ${describeStoreError(error)}\n`,
    );
    await signIn?.close();
    return 1;
  }
  await signIn?.close();
  return 0;
}

function draftLine(draftId: string, outcome: DraftItem | Error): string {
  if (outcome instanceof Error) return `draft ${draftId}: planner error: ${outcome.message}`;
  if (outcome.status === 'launched')
    return `draft ${draftId}: ${outcome.plan?.id} v${outcome.plan?.version} launched after ${outcome.rounds.length} round(s): ${outcome.executionArn}`;
  return `draft ${draftId}: ${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}${outcome.problems ? ` (${outcome.problems.length} problem(s) open after ${outcome.rounds.length} round(s))` : ''}`;
}
