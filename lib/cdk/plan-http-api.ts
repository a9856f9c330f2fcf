/**
 * The Plans and approvals HTTP API (API Gateway v2) in front of the API Lambda.
 * Launching and managing plans requires IAM (SigV4) authorization; approval links and Slack
 * interactions cannot sign requests, so they are authorized by the handler instead (an opaque,
 * signed, expiring, single-use approval id; Slack's request signature).
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** Routes callers sign with SigV4 (IAM authorization). */
export const IAM_ROUTES: readonly [HttpMethod, string][] = [
  [HttpMethod.POST, '/plans'],
  [HttpMethod.GET, '/plans'],
  [HttpMethod.GET, '/plans/{planId}'],
  [HttpMethod.POST, '/plans/{planId}/executions'],
  [HttpMethod.GET, '/executions/{executionId}'],
  [HttpMethod.GET, '/executions/{executionId}/events'],
  [HttpMethod.POST, '/executions/{executionId}/stop'],
];

/** Routes a person reaches from an email link or Slack; the handler authorizes them. */
export const LINK_ROUTES: readonly [HttpMethod, string][] = [
  [HttpMethod.GET, '/approve/{approvalId}'],
  [HttpMethod.POST, '/approve/{approvalId}'],
  [HttpMethod.POST, '/slack/interactions'],
];

export interface PlanHttpApiProps {
  /** The Lambda that serves every route. */
  readonly handler: IFunction;
  readonly logRetention: RetentionDays;
}

export class PlanHttpApi extends Construct {
  public readonly api: HttpApi;
  public readonly stage: HttpStage;
  public readonly accessLogs: LogGroup;
  /** Routes that require SigV4; grant callers `execute-api:Invoke` with `grantInvoke`. */
  public readonly iamRoutes: HttpRoute[] = [];
  /** Routes authorized by the handler (signed approval ids, Slack signatures). */
  public readonly linkRoutes: HttpRoute[] = [];

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
    const integration = new HttpLambdaIntegration('Handler', props.handler);
    const iam = new HttpIamAuthorizer();
    for (const [method, path] of IAM_ROUTES) {
      this.iamRoutes.push(this.route(method, path, integration, iam));
    }
    for (const [method, path] of LINK_ROUTES) {
      const route = this.route(method, path, integration);
      Validations.of(route).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'Approval links (email, web page) and Slack buttons cannot sign requests; the handler authorizes each call by its opaque, signed, expiring, single-use approval id or by the Slack request signature. Every other route requires IAM (SigV4).',
      });
      this.linkRoutes.push(route);
    }
  }

  /** The API's base URL (the `$default` stage). */
  get url(): string {
    return this.api.apiEndpoint;
  }

  private route(
    method: HttpMethod,
    path: string,
    integration: HttpLambdaIntegration,
    authorizer?: HttpIamAuthorizer,
  ): HttpRoute {
    return new HttpRoute(this, `${method}${path.replace(/[^A-Za-z0-9]/g, '_')}`, {
      httpApi: this.api,
      routeKey: HttpRouteKey.with(path, method),
      integration,
      ...(authorizer ? { authorizer } : {}),
    });
  }
}
