/**
 * The people who may answer gates through the API, when no outside OpenID Connect issuer is
 * configured: a Cognito user pool (administrators add approvers; no self sign-up; MFA required)
 * whose JWTs the approvals route checks and whose claims name the approver. Its hosted UI
 * (a Cognito domain) signs approvers in from the approval page, through a public app client
 * ({@link ApproverPool.addPageClient}: authorization code + PKCE, no secret).
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import {
  AccountRecovery,
  ClientAttributes,
  Mfa,
  OAuthScope,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  type UserPoolDomain,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';

export interface ApproverPoolProps {
  /**
   * The hosted UI's Cognito domain prefix (`<prefix>.auth.<region>.amazoncognito.com`), unique
   * in the region; it may not contain `aws`, `amazon` or `cognito`.
   */
  readonly domainPrefix: string;
}

/** What an approver may change about themselves through an app client: their display name, never their email. */
const APPROVER_WRITABLE = new ClientAttributes().withStandardAttributes({ fullname: true });

export class ApproverPool extends Construct {
  public readonly pool: UserPool;
  /** For scripts and the CLI (SRP sign-in). */
  public readonly client: UserPoolClient;
  /** The hosted sign-in the approval page sends approvers to. */
  public readonly domain: UserPoolDomain;
  /** The approval page's app client, once {@link addPageClient} made it. */
  public pageClient?: UserPoolClient;

  constructor(scope: Construct, id: string, props: ApproverPoolProps) {
    super(scope, id);
    this.pool = new UserPool(this, 'Pool', {
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      passwordPolicy: {
        minLength: 14,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      // An email names an approver only once verified (the API takes the email claim only with
      // email_verified): a change keeps the old, verified address until the new one is verified.
      autoVerify: { email: true },
      keepOriginal: { email: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const planReason =
      'Approvers are few, added by administrators only, sign in with MFA, and every answer is checked against the plan approval policy and journaled; Cognito threat protection (the paid Plus feature plan) is an operator choice, not a default.';
    Validations.of(this.pool).acknowledge({ id: 'AwsSolutions-COG3', reason: planReason });
    Validations.of(this.pool).acknowledge({ id: 'AwsSolutions-COG8', reason: planReason });
    this.client = this.pool.addClient('Client', {
      authFlows: { userSrp: true },
      // Approvers cannot rename themselves: only administrators change an email.
      writeAttributes: APPROVER_WRITABLE,
      // Scripts sign in with SRP; without this CDK would also enable hosted-UI flows to a placeholder callback.
      disableOAuth: true,
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
    });
    this.domain = this.pool.addDomain('SignIn', { cognitoDomain: { domainPrefix: props.domainPrefix } });
  }

  /**
   * The approval page's client: public (no secret: a page cannot keep one), authorization code
   * flow only (the page adds PKCE), scopes `openid email` (the ID token's email names the
   * approver), returning only to `callbackUrl`.
   */
  addPageClient(callbackUrl: string): UserPoolClient {
    if (this.pageClient) throw new Error('ApproverPool: the page client exists already');
    this.pageClient = this.pool.addClient('PageClient', {
      generateSecret: false,
      authFlows: {},
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL],
        callbackUrls: [callbackUrl],
      },
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      writeAttributes: APPROVER_WRITABLE,
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.hours(1),
    });
    return this.pageClient;
  }
}
