/**
 * `plangate run`'s one door for answers: the approvals API Lambda's handler (lambdas/approvals-api.ts)
 * behind the local API Gateway, with the routes and the JWT authorizer of `plangate serve` and of
 * AWS, so the terminal, the printed link's page, Slack's buttons and `plangate complete` meet the
 * same checks of the plan's approval policy (approvers, the submitter's exclusion, quorum).
 *
 * Everyone answers as the run's one local identity (the OS user, or `--as <name>`):
 * - the terminal posts with an ID token this run's own issuer mints for that identity; the
 *   issuer's key is made at start and never leaves this process, so no other process can mint one;
 * - the printed link is a recipient-bound link id for that identity (as an emailed approver's
 *   link): opening it redeems it into a page session that answers as that identity. It carries
 *   only the opaque, HMAC-signed, expiring id (the store's signing key, mode 0600), never a token.
 */
import { makeHandler as approvalsApiHandler } from '../../lambdas/approvals-api.ts';
import { JwtVerifier } from '../aws-local/api-gateway/jwt.ts';
import { LocalIssuer } from '../aws-local/api-gateway/local-issuer.ts';
import { LocalApiGateway } from '../aws-local/api-gateway/server.ts';
import { type ApprovalsApiDeps, recordRefusedAnswer } from '../runtime/api/approvals-api.ts';
import { LinkSigner } from '../runtime/gate/links.ts';

/** The audience of the ID tokens a run mints for its identity. */
const RUN_CLIENT_ID = 'plangate-run';
/** A terminal answer's token lives only as long as its request. */
const TOKEN_SECONDS = 60;

export interface RunFrontDoorProps {
  /** Who answers from this run: the terminal, the printed links' pages, `--approve`. */
  readonly identity: string;
  /** The store's approval-id signing key (links are signed and checked with it). */
  readonly signingKey: Buffer;
  /**
   * The approvals API's other dependencies, once the stack is up: the door listens first, so the
   * links' base URL is known before any gate opens.
   */
  readonly deps: Promise<Omit<ApprovalsApiDeps, 'identity' | 'signingKey'>>;
  /** @default 0 (any free port) */
  readonly port?: number;
}

export class RunFrontDoor {
  private constructor(
    private readonly gateway: LocalApiGateway,
    private readonly issuer: LocalIssuer,
    private readonly signer: LinkSigner,
    /** Who answers through this door. */
    readonly identity: string,
  ) {}

  /** The API's base URL, e.g. `http://127.0.0.1:43210`. */
  get url(): string {
    return this.gateway.url;
  }

  static async start(props: RunFrontDoorProps): Promise<RunFrontDoor> {
    const issuer = new LocalIssuer({ audience: RUN_CLIENT_ID });
    const deps: Promise<ApprovalsApiDeps> = props.deps.then((given) => ({
      ...given,
      signingKey: props.signingKey,
      identity: { mode: 'jwt' },
    }));
    const gateway = await LocalApiGateway.start({
      handlers: {
        approvals: approvalsApiHandler(deps),
        // Plans are submitted with `plangate run` itself; `plangate serve` serves the Plans API.
        plans: async () => ({
          statusCode: 404,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'plangate run serves only the approvals API' }),
        }),
      },
      jwt: new JwtVerifier({ issuer: issuer.issuer, audience: [RUN_CLIENT_ID], jwks: issuer.jwks }),
      port: props.port,
      // An answer refused before the handler (plan code, no ID token) is journaled in its gate.
      onRefused: async (refused) => recordRefusedAnswer(await deps, refused),
    });
    return new RunFrontDoor(gateway, issuer, new LinkSigner(props.signingKey), props.identity);
  }

  /**
   * The link a person opens for the gate handed out as `sharedLinkId`: bound to this run's
   * identity, so its page answers as them. Throws ApprovalError for an id the gate did not issue.
   */
  linkFor(sharedLinkId: string, planDigest: string): string {
    const bound = this.signer.forRecipient(sharedLinkId, planDigest, this.identity);
    return `${this.url}/approvals/${encodeURIComponent(bound)}`;
  }

  /** The `Authorization` header of an answer from this run: a fresh, short-lived ID token for its identity. */
  authorization(): string {
    return `Bearer ${this.issuer.token(this.identity, { token_use: 'id' }, TOKEN_SECONDS)}`;
  }

  close(): Promise<void> {
    return this.gateway.close();
  }
}
