/**
 * `plangate serve`: the platform on one machine. The local stack (engine, dynalite, event bus,
 * harness Lambdas) plus the Plans and Approvals API handlers of lambdas/ behind a local API
 * Gateway with the same routes and authorizers as the CDK stack: SigV4 on the plan routes, a JWT on
 * answering a gate, or (only when asked for) a trusted identity header from loopback.
 */
import { makeHandler as approvalsApiHandler } from '../../lambdas/approvals-api.ts';
import { makeHandler as plannerHandler } from '../../lambdas/planner.ts';
import { makeHandler as plansApiHandler } from '../../lambdas/plans-api.ts';
import type { LocalHostedUi } from '../aws-local/api-gateway/hosted-ui.ts';
import { type JwtAuthorizerConfig, JwtVerifier } from '../aws-local/api-gateway/jwt.ts';
import { type AdmissionLimits, LocalApiGateway } from '../aws-local/api-gateway/server.ts';
import { type LocalPrincipal, SigV4Verifier } from '../aws-local/api-gateway/sigv4.ts';
import { MailSink } from '../aws-local/mail-sink.ts';
import type { WriteSync } from '../engine/persistence/byte-writer.ts';
import type { StoreFault } from '../engine/persistence/store-faults.ts';
import { type DraftItem, readDraft } from '../launch/plan-drafts.ts';
import type { PlannerProvider } from '../planner/provider.ts';
import type { PolicySet } from '../policy/policy-set.ts';
import { type ApprovalsApiDeps, recordRefusedAnswer } from '../runtime/api/approvals-api.ts';
import { LOCAL_IDENTITY_HEADER } from '../runtime/api/http.ts';
import { signInCallbackUrl } from '../runtime/gate/approval-page.ts';
import { LinkSigner } from '../runtime/gate/links.ts';
import { approvalMessage } from '../runtime/notify/message.ts';
import { slackDecisionUpdater, slackEscalationUpdater } from '../runtime/notify/slack.ts';
import type { ApprovalNotice } from '../runtime/payloads/index.ts';
import { localSlackApp } from './local-slack.ts';
import { LocalRunStack } from './local-stack.ts';
import { loadSigningKey, type StorePaths } from './store-directory.ts';
import { StoreHealth } from './store-health.ts';

export const LOCAL_REGION = 'us-east-1';

export type PlatformIdentity =
  /** SigV4 for the plan routes (principals), a JWT for answering gates (when configured). */
  | {
      readonly mode: 'aws';
      readonly principals: readonly LocalPrincipal[];
      readonly jwt?: JwtAuthorizerConfig;
    }
  /** No authorizer: the handlers take `x-plangate-user` from loopback callers only. */
  | { readonly mode: 'header' };

export interface LocalPlatformProps {
  readonly paths: StorePaths;
  readonly identity: PlatformIdentity;
  /** Told of every gate waiting for a person, with the link to its approval page and the emails written. */
  readonly onGate: (notice: ApprovalNotice, link: string, emails: readonly string[]) => void;
  /** Where approval emails are written as `.eml` files (the local SES). @default - no emails */
  readonly mailDir?: string;
  /** @default 0 (any free port) */
  readonly port?: number;
  /**
   * The API's capacity: requests handled at once and waiting; beyond both, 503 with Retry-After.
   * @default DEFAULT_ADMISSION (32 under way, 512 waiting)
   */
  readonly admission?: AdmissionLimits;
  /** @default 1 */
  readonly timeScale?: number;
  /** Where shell tools and command contracts run. @default process.cwd() */
  readonly cwd?: string;
  /**
   * Where Slack is configured, as for `plangate run` (PLANGATE_SLACK_BOT_TOKEN, _SIGNING_SECRET,
   * _CHANNEL, _APPROVERS, _API_URL): each gate is posted, and the buttons are answered at
   * `/slack/interactions`. @default process.env
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The approvers' hosted sign-in (a local stand-in for Cognito's hosted UI): pages of shared
   * links sign the approver in with it, and the answer route's JWT authorizer (`identity.jwt`)
   * should trust its issuer and client id. @default - pages of shared links do not sign in
   */
  readonly signIn?: LocalHostedUi;
  /**
   * The model that drafts plans from goals (`POST /plans {goal}`), run in the background as the
   * planner Lambda runs on AWS, and told of each draft as it ends.
   * @default - no planner: goals are refused (501)
   */
  /**
   * The platform's policy (`--policy DIR`), asked by the Plans and Approvals APIs and every
   * harness Lambda. @default PolicySet.fromEnvironment()
   */
  readonly policy?: PolicySet;
  /**
   * Told when the store stops taking writes (disk full, read-only: with the fault) and when it
   * takes them again (undefined); meanwhile new work is answered 503. @default - nobody
   */
  readonly onStoreFault?: (fault: StoreFault | undefined) => void;
  /** How the engine's write-ahead log is written. @default fs.writeSync (tests inject ENOSPC or EROFS here) */
  readonly storeWriteSync?: WriteSync;
  readonly planner?: {
    readonly provider: PlannerProvider;
    readonly maxRounds?: number;
    /** Told of each draft once the planner is done with it, or of the error that stopped it. */
    readonly onDraft?: (draftId: string, outcome: DraftItem | Error) => void;
  };
}

export class LocalPlatform {
  /** Drafts the planner is working on: closing waits for them. */
  private readonly drafting = new Set<Promise<unknown>>();

  private constructor(
    readonly stack: LocalRunStack,
    readonly api: LocalApiGateway,
    /** Whether the store can be written: new work is answered 503 while it cannot. */
    readonly health: StoreHealth,
  ) {}

  get url(): string {
    return this.api.url;
  }

  static async start(props: LocalPlatformProps): Promise<LocalPlatform> {
    const signingKey = await loadSigningKey(props.paths);
    const signer = new LinkSigner(signingKey);
    const mail = props.mailDir ? new MailSink(props.mailDir) : undefined;
    const slack = await localSlackApp(props.env ?? process.env);
    // Gates the engine re-asks as it resumes come before the API listens: their links wait for its URL.
    let listen: (url: string) => void = () => {};
    const listening = new Promise<string>((resolve) => {
      listen = resolve;
    });
    let notifySlack: ((notice: ApprovalNotice) => Promise<unknown>) | undefined;
    // Every gate's approvers are told: its request, reminders, escalations and revisions.
    const notify = async (notice: ApprovalNotice): Promise<void> => {
      const apiUrl = await listening;
      const emails = mail
        ? await mail.send(notice, (recipient) =>
            approvalMessage(notice, apiUrl, {
              linkId: signer.forRecipient(notice.approvalId, notice.plan.digest, recipient),
              recipient,
            }),
          )
        : [];
      if (slack) {
        // The notifier Lambda's work; the API's URL is known once it listens.
        notifySlack ??= slack.notifier(apiUrl, stack.journalDeps('notifier'));
        // As on AWS, a message that could not be posted does not hold the gate up.
        await notifySlack(notice).catch(() => {});
      }
      props.onGate(notice, `${apiUrl}/approvals/${encodeURIComponent(notice.approvalId)}`, emails);
    };
    const stack = await LocalRunStack.start({
      paths: props.paths,
      holder: 'plangate serve',
      storeWriteSync: props.storeWriteSync,
      signingKey,
      timeScale: props.timeScale,
      cwd: props.cwd,
      ...(slack
        ? {
            gateListeners: {
              onDecided: slackDecisionUpdater(slack.interactions.client),
              onEscalated: slackEscalationUpdater(slack.interactions.client),
            },
          }
        : {}),
      notify,
      policy: props.policy,
    });
    const health = new StoreHealth({
      engine: stack.engine,
      root: props.paths.root,
      onChange: props.onStoreFault,
    });
    try {
      const header = props.identity.mode === 'header';
      // Each handler's journal events are logged as its own (the store's harness log).
      const base = (handler: 'plansApi' | 'planner' | 'approvalsApi') => ({
        ...stack.journalDeps(handler),
        sfn: stack.sfn,
        policy: props.policy,
      });
      const launch = (handler: 'plansApi' | 'planner') => ({
        ...base(handler),
        roleArn: LocalRunStack.ROLE_ARN,
        substitutions: LocalRunStack.substitutions(),
      });
      const planner = props.planner;
      let platform: LocalPlatform | undefined;
      const startPlanning = planner
        ? async (draftId: string) => {
            // As the Plans API's asynchronous Lambda invocation: the request does not wait.
            const running = plannerHandler({ ...launch('planner'), ...planner })({ draftId })
              .then(async () => {
                const draft = await readDraft(stack.journalDeps(), draftId);
                if (draft) planner.onDraft?.(draftId, draft);
              })
              .catch((error: unknown) =>
                planner.onDraft?.(draftId, error instanceof Error ? error : new Error(String(error))),
              )
              .finally(() => platform?.drafting.delete(running));
            platform?.drafting.add(running);
          }
        : undefined;
      // The sign-in callback is on this API, whose URL is known once it listens.
      const approvalsDeps: Promise<ApprovalsApiDeps> = listening.then((url) => ({
        ...base('approvalsApi'),
        signingKey,
        notify,
        // The approvers of a local platform read its pages on this machine, in its time zone.
        displayTimeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        identity: header ? { mode: 'header', header: LOCAL_IDENTITY_HEADER } : { mode: 'jwt' },
        slack: slack?.interactions,
        ...(props.signIn
          ? {
              signIn: {
                domainUrl: props.signIn.url,
                clientId: props.signIn.clientId,
                redirectUri: signInCallbackUrl(url),
              },
            }
          : {}),
      }));
      const api = await LocalApiGateway.start({
        handlers: {
          plans: plansApiHandler({
            ...launch('plansApi'),
            startPlanning,
            submitter: header ? { mode: 'header', header: LOCAL_IDENTITY_HEADER } : { mode: 'iam' },
          }),
          approvals: approvalsApiHandler(approvalsDeps),
        },
        ...(props.identity.mode === 'aws'
          ? {
              sigv4: new SigV4Verifier(props.identity.principals, { region: LOCAL_REGION }),
              jwt: props.identity.jwt ? new JwtVerifier(props.identity.jwt) : undefined,
            }
          : { authorizers: 'none' as const }),
        port: props.port,
        admission: props.admission,
        // An answer refused before the handler (plan code, no identity) is journaled in its gate.
        onRefused: async (refused) => recordRefusedAnswer(await approvalsDeps, refused),
        // a write in the store before each new piece of work: a full or read-only disk is found
        // before the work is taken, not half-way through it
        unavailable: () => health.refusal(true),
      });
      props.signIn?.allowCallback(signInCallbackUrl(api.url));
      listen(api.url);
      platform = new LocalPlatform(stack, api, health);
      return platform;
    } catch (error) {
      health.close();
      await stack.close();
      throw error;
    }
  }

  /**
   * Stops without losing what was accepted: the API refuses new requests (503) and finishes
   * those under way, drafts are finished, then the stack drains and closes (LocalRunStack.close).
   */
  async close(options: { readonly drainMs?: number } = {}): Promise<void> {
    this.health.close();
    await this.api.close();
    await Promise.all(this.drafting);
    await this.stack.close(options);
  }
}
