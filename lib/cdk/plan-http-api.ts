/**
 * The Plans and approvals HTTP API (API Gateway v2, payload v2) in front of lambdas/plans-api.ts
 * and lambdas/approvals-api.ts. Submitting and following plans requires IAM (SigV4). Answering a
 * gate requires a JWT (the approvals handler names the approver from its claims), except through
 * a recipient-bound link, whose signature the handler checks and which answers as the one
 * recipient it was emailed to. The approval page itself is open: it is reached from an email or
 * Slack link whose approval id is opaque, signed, expiring and single-use, and it shows the gate
 * without answering it.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  type IHttpRouteAuthorizer,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** Routes of lambdas/plans-api.ts; callers sign with SigV4. */
export const PLAN_ROUTES: readonly [HttpMethod, string][] = [
  [HttpMethod.POST, '/plans'],
  [HttpMethod.GET, '/plans/{executionId}'],
  [HttpMethod.GET, '/executions/{executionId}/events'],
];

/** The approval page (lambdas/approvals-api.ts), opened from a link. */
export const APPROVAL_PAGE_ROUTE: readonly [HttpMethod, string] = [HttpMethod.GET, '/approvals/{approvalId}'];

/** Answering a gate (lambdas/approvals-api.ts); the JWT names the approver. */
export const APPROVAL_ANSWER_ROUTE: readonly [HttpMethod, string] = [
  HttpMethod.POST,
  '/approvals/{approvalId}',
];

/** Answering through a recipient-bound (emailed) link: no JWT, the handler verifies the id's signature. */
export const APPROVAL_RECIPIENT_ANSWER_ROUTE: readonly [HttpMethod, string] = [
  HttpMethod.POST,
  '/approvals/{approvalId}/as-recipient',
];

/** Slack's interactivity request URL: a click on a button; the handler verifies Slack's signature. */
export const SLACK_INTERACTIONS_ROUTE: readonly [HttpMethod, string] = [
  HttpMethod.POST,
  '/slack/interactions',
];

export interface PlanHttpApiProps {
  /** Serves PLAN_ROUTES. @default - no plan routes */
  readonly plansHandler?: IFunction;
  /** Serves the approval page and answers. @default - no approval routes (or {@link PlanHttpApi.addApprovalRoutes} later) */
  readonly approvalsHandler?: IFunction;
  /** Verifies the approver's JWT on APPROVAL_ANSWER_ROUTE. Required with `approvalsHandler`. */
  readonly approverAuthorizer?: IHttpRouteAuthorizer;
  readonly logRetention: RetentionDays;
}

export class PlanHttpApi extends Construct {
  public readonly api: HttpApi;
  public readonly stage: HttpStage;
  public readonly accessLogs: LogGroup;
  /** Every route, by route key (e.g. `POST /plans`). */
  public readonly routes = new Map<string, HttpRoute>();

  constructor(scope: Construct, id: string, props: PlanHttpApiProps) {
    super(scope, id);
    this.api = new HttpApi(this, 'Api', {
      description: 'plangate: launch plans, answer approvals',
      createDefaultStage: false,
    });
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      autoDeploy: true,
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.jsonWithStandardFields(),
      },
      throttle: { rateLimit: 50, burstLimit: 100 },
    });

    if (props.plansHandler) {
      const plans = new HttpLambdaIntegration('Plans', props.plansHandler);
      const iam = new HttpIamAuthorizer();
      for (const [method, path] of PLAN_ROUTES) this.route(method, path, plans, iam);
    }
    if (props.approvalsHandler) {
      if (!props.approverAuthorizer) {
        throw new Error(
          'PlanHttpApi: approvalsHandler needs an approverAuthorizer (who answers is named by it)',
        );
      }
      this.addApprovalRoutes(props.approvalsHandler, props.approverAuthorizer);
    }
  }

  /**
   * The approval routes: the page (open; also the sign-in callback `/approvals/signed-in`), the
   * answer behind `authorizer`, and the recipient-bound answer (open, verified by the handler).
   * Separate from the constructor because a sign-in client's callback URL needs this API's URL
   * before the authorizer that accepts that client's tokens exists.
   */
  addApprovalRoutes(handler: IFunction, authorizer: IHttpRouteAuthorizer): void {
    if (this.routes.has(APPROVAL_PAGE_ROUTE.join(' ')))
      throw new Error('PlanHttpApi: the approval routes exist already');
    const approvals = new HttpLambdaIntegration('Approvals', handler);
    const page = this.route(...APPROVAL_PAGE_ROUTE, approvals);
    Validations.of(page).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The approval page (and the sign-in callback page at /approvals/signed-in) is opened from an email or Slack link or the hosted sign-in redirect, which cannot carry credentials; the handler only shows a gate whose opaque, signed, expiring, single-use approval id verifies, and answering it needs a JWT or a recipient-bound id.',
    });
    this.route(...APPROVAL_ANSWER_ROUTE, approvals, authorizer);
    const asRecipient = this.route(...APPROVAL_RECIPIENT_ANSWER_ROUTE, approvals);
    Validations.of(asRecipient).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Answering through an emailed link: the id is an HMAC over approval id, recipient, expiry and plan digest that only the emailed recipient holds (possession of the inbox is the authentication); the handler verifies it, names that recipient as the approver, checks the plan approval policy, and accepts one answer per recipient before the link expires.',
    });
  }

  /** Slack's interactivity request URL, served by the approvals handler. */
  addSlackInteractionsRoute(handler: IFunction): void {
    const route = this.route(
      ...SLACK_INTERACTIONS_ROUTE,
      new HttpLambdaIntegration('SlackInteractions', handler),
    );
    Validations.of(route).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        "Slack calls this URL and cannot present AWS credentials or a JWT; the handler verifies Slack's request signature (the app's signing secret, a 5-minute replay window) with @slack/bolt before reading the request, and the button carries only an opaque, signed, expiring approval id.",
    });
  }

  /** The API's base URL (the `$default` stage); approval links are `<url>/approvals/<id>`. */
  get url(): string {
    return this.api.apiEndpoint;
  }

  private route(
    method: HttpMethod,
    path: string,
    integration: HttpLambdaIntegration,
    authorizer?: IHttpRouteAuthorizer,
  ): HttpRoute {
    const route = new HttpRoute(this, `${method}${path.replace(/[^A-Za-z0-9]/g, '_')}`, {
      httpApi: this.api,
      routeKey: HttpRouteKey.with(path, method),
      integration,
      ...(authorizer ? { authorizer } : {}),
    });
    this.routes.set(`${method} ${path}`, route);
    return route;
  }
}
