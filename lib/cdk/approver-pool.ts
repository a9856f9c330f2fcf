/**
 * The people who may answer gates through the API, when no outside OpenID Connect issuer is
 * configured: a Cognito user pool (administrators add approvers; no self sign-up; MFA required)
 * whose JWTs the approvals route checks and whose claims name the approver.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccountRecovery, Mfa, UserPool, type UserPoolClient } from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';

export class ApproverPool extends Construct {
  public readonly pool: UserPool;
  public readonly client: UserPoolClient;

  constructor(scope: Construct, id: string) {
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
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const planReason =
      'Approvers are few, added by administrators only, sign in with MFA, and every answer is checked against the plan approval policy and journaled; Cognito threat protection (the paid Plus feature plan) is an operator choice, not a default.';
    Validations.of(this.pool).acknowledge({ id: 'AwsSolutions-COG3', reason: planReason });
    Validations.of(this.pool).acknowledge({ id: 'AwsSolutions-COG8', reason: planReason });
    this.client = this.pool.addClient('Client', {
      authFlows: { userSrp: true },
      preventUserExistenceErrors: true,
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
    });
  }
}
