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
import { API_ROUTES, type ApiRoute } from '../runtime/api/routes.ts';

/** How a route of lib/runtime/api/routes.ts is authorized on API Gateway. */
const routesOf = (handler: ApiRoute['handler']): readonly ApiRoute[] =>
  API_ROUTES.filter((route) => route.handler === handler);

/** Why an open route may be open (cdk-nag AwsSolutions-APIG4), by route key. */
const OPEN_ROUTE_REASONS: Readonly<Record<string, string>> = {
  'GET /openapi.json':
    'The OpenAPI document describes the API (routes, schemas, authorizers) and holds no data; clients fetch it before they can sign.',
  'GET /approvals/{approvalId}':
    'The approval page (and the sign-in callback page at /approvals/signed-in) is opened from an email or Slack link or the hosted sign-in redirect, which cannot carry credentials; the handler only shows a gate whose opaque, signed, expiring, single-use approval id verifies, and answering it needs a JWT or a recipient-bound id.',
  'GET /approvals/{approvalId}/progress':
    "The progress of an approval page's run is opened by the approver's browser, which cannot carry AWS credentials; the handler shows it only with that page's session cookie (encrypted, HttpOnly, SameSite=Strict, scoped to the page, 30 minutes), which only a verified approval link opens, and it shows progress lines only, never a token.",
  'POST /slack/interactions':
    "Slack's interactivity requests carry no AWS credentials; the handler verifies each with the Slack app's signing secret (HMAC over the timestamp and body, dated within five minutes of now either way, Slack's own verifySlackRequest) and answers only as the approver the Slack user is mapped to.",
  'POST /approvals/{approvalId}/as-recipient':
    'Answering through an emailed link: the id is an HMAC over approval id, recipient, expiry and plan digest that only the emailed recipient holds (possession of the inbox is the authentication); the handler verifies it, names that recipient as the approver, checks the plan approval policy, and accepts one answer per recipient before the link expires.',
};

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
      for (const route of routesOf('plans')) this.route(route, plans);
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
    if (this.routes.has('GET /approvals/{approvalId}'))
      throw new Error('PlanHttpApi: the approval routes exist already');
    const approvals = new HttpLambdaIntegration('Approvals', handler);
    for (const route of routesOf('approvals')) this.route(route, approvals, authorizer);
  }

  /** The API's base URL (the `$default` stage); approval links are `<url>/approvals/<id>`. */
  get url(): string {
    return this.api.apiEndpoint;
  }

  /** One route; `iam` routes get the IAM authorizer, `jwt` routes `jwtAuthorizer`, open ones an acknowledged APIG4. */
  private route(
    route: ApiRoute,
    integration: HttpLambdaIntegration,
    jwtAuthorizer?: IHttpRouteAuthorizer,
  ): HttpRoute {
    const key = `${route.method} ${route.path}`;
    const authorizer =
      route.auth === 'iam' ? new HttpIamAuthorizer() : route.auth === 'jwt' ? jwtAuthorizer : undefined;
    if (route.auth === 'jwt' && !authorizer) throw new Error(`PlanHttpApi: ${key} needs a JWT authorizer`);
    const created = new HttpRoute(this, `${route.method}${route.path.replace(/[^A-Za-z0-9]/g, '_')}`, {
      httpApi: this.api,
      routeKey: HttpRouteKey.with(route.path, HttpMethod[route.method]),
      integration,
      ...(authorizer ? { authorizer } : {}),
    });
    if (route.auth === 'open') {
      const reason = OPEN_ROUTE_REASONS[key];
      if (!reason) throw new Error(`PlanHttpApi: open route ${key} has no reason to be open`);
      Validations.of(created).acknowledge({ id: 'AwsSolutions-APIG4', reason });
    }
    this.routes.set(key, created);
    return created;
  }
}
