/**
 * The IAM simulator's front: one loopback endpoint before the local AWS services (point
 * `AWS_ENDPOINT_URL` at it): the AWS JSON services (DynamoDB, EventBridge, Secrets Manager), whose
 * allowed requests are forwarded unchanged to their upstreams; Lambda's Invoke of the account's
 * functions (lambda-invoke.ts), run by `functions`; and STS AssumeRole (sts-assume-role.ts), which
 * issues a role session's credentials here. Each request must be signed (Signature Version 4,
 * checked with the SDK's signer) with unexpired credentials this front issued, which name the role
 * they were issued for (and the session policy they were assumed with); its action and resources
 * are named and each is put to `authorize`, an AssumeRole to the target role's trust policy too.
 * A refusal is answered as the service answers one (AccessDeniedException, AccessDenied in STS's
 * XML, …). Every decision is kept.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { SigV4Verifier } from '../api-gateway/sigv4.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import { type AuthorizationRequest, type Decision, evaluate } from './evaluate.ts';
import { type FunctionOutcome, invokeResponse, parseInvoke } from './lambda-invoke.ts';
import type { NamedPolicy } from './policy-document.ts';
import {
  type AccountScope,
  FRONTED_SERVICES,
  type FrontedService,
  isFrontedService,
  nameRequest,
} from './service-requests.ts';
import {
  assumeRoleResponse,
  parseAssumeRole,
  type StsErrorCode,
  stsErrorResponse,
} from './sts-assume-role.ts';

/** Temporary credentials of a role, as Lambda hands its function (AWS_ACCESS_KEY_ID, …) or STS issues them. */
export interface IssuedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  /** The role they were issued for. */
  readonly roleArn: string;
  /** The session's name, when they are a role session this front's STS issued. */
  readonly sessionName?: string;
  /** The session policy they were assumed with: every request is also put to it. */
  readonly sessionPolicy?: NamedPolicy;
  /** When they stop being accepted. @default never */
  readonly expiresAt?: Date;
}

/** The account's Lambda functions, as the front invokes them. */
export interface LocalFunctions {
  /** Whether the account has this (unqualified) function. */
  has(functionArn: string): boolean;
  /** Runs the function's handler with `event`, as Lambda runs it (its own process, its own role). */
  invoke(functionArn: string, event: unknown): Promise<FunctionOutcome>;
}

export interface EnforcingFrontProps extends AccountScope {
  readonly credentials: readonly IssuedCredentials[];
  /** Where each JSON service's allowed requests go. */
  readonly upstreams: Readonly<Partial<Record<FrontedService, string>>>;
  readonly authorize: (request: AuthorizationRequest) => Decision;
  /** Lambda's functions. @default none: every Invoke is answered ResourceNotFoundException */
  readonly functions?: LocalFunctions;
  /** A role's trust policy, which sts:AssumeRole of it must satisfy. @default none: no role can be assumed */
  readonly trustPolicyOf?: (roleArn: string) => NamedPolicy | undefined;
}

/** One request's outcome, as the front decided it. */
export interface FrontDecision {
  readonly service: string;
  /** The signer's role; absent when the request was not (validly) signed. */
  readonly roleArn?: string;
  /** The signer's role session, when its credentials were issued by this front's STS. */
  readonly session?: string;
  readonly action?: string;
  readonly resource?: string;
  readonly allowed: boolean;
  /** The error type answered (a policy's denial: and IAM's reason), or the statement that allowed it. */
  readonly why: string;
}

export interface EnforcingFront {
  readonly endpoint: string;
  readonly decisions: readonly FrontDecision[];
  close(): Promise<void>;
}

/** What the front serves, by the service name a signature is scoped to. */
type ServedService = FrontedService | 'lambda' | 'sts';
const SERVED: readonly string[] = [...Object.keys(FRONTED_SERVICES), 'lambda', 'sts'];
const isServed = (service: string): service is ServedService =>
  isFrontedService(service) || service === 'lambda' || service === 'sts';

const SCOPE = /Credential=([^/\s,]+)\/\d{8}\/[^/\s]+\/([^/\s]+)\/aws4_request/;

export async function startEnforcingFront(props: EnforcingFrontProps): Promise<EnforcingFront> {
  const decisions: FrontDecision[] = [];
  const issued = new Map(props.credentials.map((c) => [c.accessKeyId, c]));

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> => {
    const headers = lowerCaseHeaders(req);
    const [rawPath = '/', rawQuery = ''] = (req.url ?? '/').split('?');
    const target = headers['x-amz-target'] ?? '';
    const scope = SCOPE.exec(headers.authorization ?? '');
    const service = scope?.[2] ?? unsignedServiceOf(rawPath, target, headers['content-type']);
    const refuse = (
      type: RefusalType,
      message: string,
      decided: Omit<FrontDecision, 'service' | 'allowed' | 'why'> & { why?: string } = {},
    ) => {
      decisions.push({ service: service ?? '(unknown)', why: type, ...decided, allowed: false });
      answerRefusal(res, service, type, message);
    };
    if (!service || !isServed(service))
      return refuse(
        'UnknownOperationException',
        `the IAM simulator fronts ${SERVED.join(', ')}, not ${service ?? 'this request'}`,
      );
    const served = service;
    if (!scope)
      return refuse('MissingAuthenticationTokenException', 'Request is missing Authentication Token');
    const credentials = issued.get(scope[1] ?? '');
    // Temporary credentials: the key and its session token go together.
    if (!credentials || headers['x-amz-security-token'] !== credentials.sessionToken)
      return refuse('UnrecognizedClientException', 'The security token included in the request is invalid.');
    if (credentials.expiresAt && credentials.expiresAt.getTime() <= Date.now())
      return refuse('ExpiredTokenException', 'The security token included in the request is expired');
    const verified = await new SigV4Verifier([{ ...credentials, arn: credentials.roleArn }], {
      region: props.region,
      service: served,
    }).verify({ method: req.method ?? 'POST', rawPath, rawQuery, headers, body });
    const caller = {
      roleArn: credentials.roleArn,
      ...(credentials.sessionName ? { session: credentials.sessionName } : {}),
    };
    if (!verified.ok) return refuse('InvalidSignatureException', verified.message, caller);

    /** Puts one action on one resource to the caller's policies; false (and answered) when denied. */
    const allows = (action: string, resource: string): boolean => {
      const decision = props.authorize({
        principalArn: credentials.roleArn,
        action,
        resource,
        ...(credentials.sessionPolicy ? { sessionPolicy: credentials.sessionPolicy } : {}),
      });
      if (decision.effect === 'deny') {
        if (decision.reason === 'unevaluable') console.error(`IAM simulator: ${decision.error}`);
        const why = denialReason(action, decision);
        refuse(
          'AccessDeniedException',
          `User: ${credentials.roleArn} is not authorized to perform: ${action} on resource: ${resource} ${why}`,
          { ...caller, action, resource, why: `AccessDeniedException ${why}` },
        );
        return false;
      }
      decisions.push({ service: served, ...caller, action, resource, allowed: true, why: decision.by });
      return true;
    };

    if (served === 'lambda') {
      const invoke = parseInvoke(
        req.method ?? 'POST',
        rawPath,
        rawQuery,
        headers['x-amz-invocation-type'],
        props,
      );
      if (!invoke.ok) return refuse(invoke.type, invoke.message, caller);
      const { request } = invoke;
      if (!allows('lambda:InvokeFunction', request.resource)) return;
      if (
        !props.functions?.has(request.functionArn) ||
        (request.qualifier && request.qualifier !== '$LATEST')
      )
        return refuse('ResourceNotFoundException', `Function not found: ${request.resource}`, caller);
      let event: unknown;
      try {
        event = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
      } catch {
        return refuse('InvalidRequestContentException', 'Could not parse request body into json', caller);
      }
      if (request.invocationType === 'DryRun') return answer(res, 204, {}, '');
      const outcome = props.functions.invoke(request.functionArn, event);
      if (request.invocationType === 'Event') {
        outcome.catch((error: unknown) => console.error(`IAM simulator: ${request.functionArn}: ${error}`));
        return answer(res, 202, {}, '');
      }
      const { status, headers: out, payload } = invokeResponse(await outcome);
      return answer(res, status, out, payload);
    }

    if (served === 'sts') {
      const assume = parseAssumeRole(body);
      if (!assume.ok) return refuse(assume.code, assume.message, caller);
      const { request } = assume;
      if (!allows('sts:AssumeRole', request.roleArn)) return;
      const trust = props.trustPolicyOf?.(request.roleArn);
      const trusted = trust
        ? evaluate(
            { principalArn: credentials.roleArn, action: 'sts:AssumeRole', resource: request.roleArn },
            { identity: [], resource: trust },
          )
        : undefined;
      if (trusted?.effect !== 'allow')
        return refuse(
          'AccessDeniedException',
          `User: ${credentials.roleArn} is not authorized to perform: sts:AssumeRole on resource: ${request.roleArn} because ${trust ? `its trust policy (${trust.name}) does not allow it` : 'the account has no such role'}`,
          { ...caller, action: 'sts:AssumeRole', resource: request.roleArn },
        );
      decisions.push({
        service: served,
        ...caller,
        action: 'sts:AssumeRole',
        resource: request.roleArn,
        allowed: true,
        why: trusted.by,
      });
      const expiresAt = new Date(Date.now() + request.durationSeconds * 1000);
      const session: IssuedCredentials = {
        accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString('base64'),
        sessionToken: randomBytes(48).toString('base64'),
        roleArn: request.roleArn,
        sessionName: request.sessionName,
        ...(request.sessionPolicy ? { sessionPolicy: request.sessionPolicy } : {}),
        expiresAt,
      };
      issued.set(session.accessKeyId, session);
      return answer(
        res,
        200,
        { 'content-type': 'text/xml' },
        assumeRoleResponse(request, { ...session, expiresAt }),
      );
    }

    let parsed: Record<string, unknown>;
    try {
      parsed = body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);
    } catch {
      return refuse('SerializationException', 'the body is not JSON', caller);
    }
    const named = nameRequest(served, target, parsed, props);
    if (!named.ok) return refuse('AccessDeniedException', named.message, caller);
    for (const { action, resource } of named.requests) if (!allows(action, resource)) return;
    const upstream = props.upstreams[served];
    if (!upstream)
      return refuse('UnknownOperationException', `no local ${served} behind the IAM simulator`, caller);
    forward(req, res, body, upstream);
  };

  const server = createServer((req, res) => {
    readBody(req)
      .then((body) => handle(req, res, body))
      .catch((error: unknown) => {
        if (!res.headersSent) answerRefusal(res, undefined, 'InternalFailure', String(error));
      });
  });
  const endpoint = await listenOnLoopback(server, 0, {
    refuse: (res, message) => answerRefusal(res, undefined, 'AccessDeniedException', message),
  });
  return { endpoint, decisions, close: () => closeServer(server) };
}

/** An unsigned request's service, as far as it shows: Lambda's path, STS's form, a JSON service's target. */
function unsignedServiceOf(
  rawPath: string,
  target: string,
  contentType: string | undefined,
): string | undefined {
  if (rawPath.startsWith('/2015-03-31/functions/')) return 'lambda';
  if (contentType?.startsWith('application/x-www-form-urlencoded')) return 'sts';
  return serviceOfTarget(target);
}

type RefusalType =
  | 'AccessDeniedException'
  | 'MissingAuthenticationTokenException'
  | 'UnrecognizedClientException'
  | 'ExpiredTokenException'
  | 'InvalidSignatureException'
  | 'SerializationException'
  | 'UnknownOperationException'
  | 'ResourceNotFoundException'
  | 'InvalidParameterValueException'
  | 'InvalidRequestContentException'
  | StsErrorCode;

/** STS's names of the refusals the other services name their own way. */
const STS_CODES: Partial<Record<RefusalType, StsErrorCode>> = {
  AccessDeniedException: 'AccessDenied',
  MissingAuthenticationTokenException: 'MissingAuthenticationToken',
  UnrecognizedClientException: 'InvalidClientTokenId',
  ExpiredTokenException: 'ExpiredToken',
  InvalidSignatureException: 'SignatureDoesNotMatch',
  UnknownOperationException: 'InvalidAction',
};

const STATUS: Partial<Record<RefusalType, number>> = {
  InternalFailure: 500,
  ResourceNotFoundException: 404,
};
/** Lambda's and STS's status for a refused signer (the JSON services answer 400). */
const FORBIDDEN: readonly RefusalType[] = [
  'AccessDeniedException',
  'MissingAuthenticationTokenException',
  'UnrecognizedClientException',
  'ExpiredTokenException',
  'InvalidSignatureException',
];

/** Why IAM denied a request, in its own words (`with an explicit deny in …`, `because …`). */
function denialReason(action: string, decision: Extract<Decision, { effect: 'deny' }>): string {
  return decision.reason === 'explicit'
    ? `with an explicit deny in ${decision.by}`
    : decision.reason === 'implicit'
      ? `because no identity-based policy allows the ${action} action`
      : decision.reason === 'session'
        ? `because no session policy allows the ${action} action (${decision.by})`
        : `because ${decision.error}`;
}

/**
 * The service's error shape: DynamoDB's JSON 1.0 names types with coral's namespace; JSON 1.1
 * services do not; Lambda (REST JSON) names it in x-amzn-errortype; STS answers in XML.
 */
function answerRefusal(
  res: ServerResponse,
  service: string | undefined,
  type: RefusalType,
  message: string,
): void {
  const forbidden = FORBIDDEN.includes(type) ? 403 : 400;
  if (service === 'sts') {
    const code = STS_CODES[type] ?? (type as StsErrorCode);
    answer(res, STATUS[type] ?? forbidden, { 'content-type': 'text/xml' }, stsErrorResponse(code, message));
  } else if (service === 'lambda') {
    answer(
      res,
      STATUS[type] ?? forbidden,
      { 'content-type': 'application/json', 'x-amzn-errortype': type },
      JSON.stringify({ Type: 'User', message }),
    );
  } else {
    const dynamo = service === 'dynamodb';
    const body = JSON.stringify(
      dynamo
        ? { __type: `com.amazon.coral.service#${type}`, Message: message }
        : { __type: type, Message: message },
    );
    answer(
      res,
      STATUS[type] === 500 ? 500 : 400,
      { 'content-type': `application/x-amz-json-${dynamo ? '1.0' : '1.1'}`, 'x-amzn-errortype': type },
      body,
    );
  }
}

function answer(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, {
    ...headers,
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}

function serviceOfTarget(target: string): FrontedService | undefined {
  return (Object.keys(FRONTED_SERVICES) as FrontedService[]).find((s) =>
    target.startsWith(FRONTED_SERVICES[s].targetPrefix),
  );
}

/** Sends the request on as it came (the upstream's own Host), and its answer back. */
function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, upstream: string): void {
  const url = new URL(req.url ?? '/', upstream);
  const out = httpRequest(
    url,
    {
      method: req.method,
      headers: { ...req.headers, host: url.host, 'content-length': String(body.length) },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', (error) => {
    if (!res.headersSent)
      answerRefusal(res, undefined, 'InternalFailure', `upstream ${upstream}: ${error.message}`);
  });
  out.end(body);
}

function lowerCaseHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  return headers;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
