/**
 * The OpenAPI 3.1 document of plangate's HTTP API, generated from the route list
 * (lib/runtime/api/routes.ts) and the zod schemas of what each route takes and answers
 * (plans-api-schemas.ts, the plan schema, the gate payloads). Served at `GET /openapi.json`; the
 * e2e tests check every response they see against the served document, and `redocly lint` runs on
 * it in the suite.
 */
import { z } from 'zod';
import { PlanSchema } from '../plan/schema.ts';
import { API_ROUTES, type ApiRoute, type RouteAuth } from '../runtime/api/routes.ts';
import {
  ApprovalDecisionSchema,
  ApprovalViewSchema,
  EscalationDecisionSchema,
  GateApproversSchema,
  GateRevisionSchema,
  HumanDecisionSchema,
  JournalRecordSchema,
  PlanIdentitySchema,
  ShownCallSchema,
  StepGateViewSchema,
  StepViewSchema,
} from '../runtime/payloads/index.ts';
import {
  AnswerOutcomeSchema,
  DraftAcceptedSchema,
  DraftResponseSchema,
  ErrorResponseSchema,
  EventsResponseSchema,
  FormAnswerSchema,
  GateViewSchema,
  GoalRequestSchema,
  JsonAnswerSchema,
  ProblemSchema,
  StatusResponseSchema,
  SubmitResponseSchema,
  WaitingGateSchema,
} from './plans-api-schemas.ts';

/** A component: its schema and, for one defined elsewhere without a description, what it is. */
type Component = readonly [z.ZodType, string?];

/** What the API answers (zod's output side), by component name. */
const RESPONSE_COMPONENTS = {
  Error: [ErrorResponseSchema],
  Problem: [ProblemSchema, 'One problem with a plan, located in the document as submitted'],
  Submitted: [SubmitResponseSchema, 'A plan validated, deployed and started: it waits at its gate'],
  DraftAccepted: [DraftAcceptedSchema, 'A goal accepted: the planner drafts the plan in the background'],
  Draft: [DraftResponseSchema, 'A plan being drafted from a goal, and how that ended'],
  Status: [
    StatusResponseSchema,
    "An execution's status, each step's progress and the gates waiting for a person, from its journal",
  ],
  WaitingGate: [
    WaitingGateSchema,
    'A gate waiting for a person: what it asks, who may answer, until when, what happens then, and its shared link',
  ],
  Events: [EventsResponseSchema, "An execution's journal, in order"],
  JournalRecord: [JournalRecordSchema, 'One journal event, hash-chained to the one before it'],
  PlanIdentity: [PlanIdentitySchema, 'Which plan: id, version and content digest'],
  GateView: [GateViewSchema],
  ApprovalView: [
    ApprovalViewSchema,
    'What a plan approval covers, built by the compiler and bound to the plan digest: every step as its approvers see it, the postconditions, the budget and the secret names (never values)',
  ],
  StepView: [
    StepViewSchema,
    'One step as its approvers see it: its exact call, contract, rollback and recovery, and the risk marks the harness computed',
  ],
  ShownCall: [
    ShownCallSchema,
    'What the harness will execute, exactly as it runs (no shortening, no redaction): a command, a request, a function, a task, an assertion…',
  ],
  StepGateView: [
    StepGateViewSchema,
    'What a step gate shows: the step, what already ran, the values it consumes',
  ],
  ApprovalPolicy: [
    GateApproversSchema,
    'Who may answer a gate, who never may, and how many approvals decide',
  ],
  GateRevision: [
    GateRevisionSchema,
    'The content as approvers modified it; the full quorum approves it again',
  ],
  ApprovalDecision: [ApprovalDecisionSchema, 'A decision of a plan gate or a step gate'],
  EscalationDecision: [
    EscalationDecisionSchema,
    'A decision of an escalation (a step failed, its retries exhausted)',
  ],
  HumanDecision: [HumanDecisionSchema, "A person's report of a human step"],
  AnswerOutcome: [
    AnswerOutcomeSchema,
    'What an answer did: decided the gate, recorded a vote, or made a revision',
  ],
} as const satisfies Record<string, Component>;

/** What the API takes (zod's input side: defaults may be left out), by component name. */
const REQUEST_COMPONENTS = {
  Plan: [PlanSchema, 'A plan document (docs/plan-formats.md); as JSON, or the same fields in YAML'],
  GoalRequest: [GoalRequestSchema, 'A goal for the planner to draft a plan from'],
  Answer: [JsonAnswerSchema],
  AnswerForm: [FormAnswerSchema],
} as const satisfies Record<string, Component>;

type ComponentName = keyof typeof RESPONSE_COMPONENTS | keyof typeof REQUEST_COMPONENTS;

/** The JSON Schemas of a set of components, each referring to the others as `#/components/schemas/<name>`. */
function componentSchemas(
  components: Readonly<Record<string, Component>>,
  io: 'input' | 'output',
): Record<string, Record<string, unknown>> {
  const registry = z.registry<{ id: string }>();
  for (const [id, [schema]] of Object.entries(components)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io,
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, generated]) => {
      const { $schema: _dialect, $id: _id, ...schema } = generated as Record<string, unknown>;
      const description = components[id]?.[1];
      return [id, { ...(description && !schema.description ? { description } : {}), ...schema }];
    }),
  );
}

/** A response body: a component, or an inline JSON Schema. */
type Body = ComponentName | { readonly inline: Record<string, unknown> };
interface Response {
  readonly description: string;
  /** Media type → body; empty for a response without one (a redirect). */
  readonly content: Readonly<Record<string, Body>>;
}
type Responses = Readonly<Record<number, Response>>;

const HTML = { 'text/html': { inline: { type: 'string', description: 'An HTML page' } } } as const;
const error = (description: string): Response => ({ description, content: { 'application/json': 'Error' } });
/** A refusal of the approval routes: JSON when asked for (Accept or a JSON body), else a page saying it in plain words. */
const pageError = (description: string): Response => ({
  description,
  content: { 'application/json': 'Error', ...HTML },
});
/** Refusals of a link or page session (lib/runtime/api/approvals-api.ts STATUS_OF, page-session.ts). */
const LINK_REFUSALS: Responses = {
  400: pageError('A malformed link id, or an answer that is not valid for this gate (nothing recorded)'),
  403: pageError(
    "Not allowed: the approval policy refuses this approver, or a page session's cookie or form token is missing or wrong (open the link again)",
  ),
  404: pageError('No such gate: an unknown or forged link id'),
  409: pageError('Already answered, or answered for another content digest than the current one'),
  410: pageError('Gone: the link expired, or a later version of the plan superseded this gate'),
};
const BODY_TOO_LARGE = 'A body over 4 MiB (4,194,304 bytes): the message names the limit; nothing recorded';

/** What each route's handler answers, by status. */
const RESPONSES: Readonly<Record<string, Responses>> = {
  'POST /plans': {
    201: {
      description: 'The plan was valid: deployed and started',
      content: { 'application/json': 'Submitted' },
    },
    202: {
      description: 'A goal: the planner drafts the plan in the background (follow `location`)',
      content: { 'application/json': 'DraftAccepted' },
    },
    400: error(
      "An invalid plan (every problem located in `problems`: the validator's; too-many-steps, a PLAN_CREATED larger than one journal record; and Step Functions' quotas': definition-too-large, payload-too-large, history-too-long) or a malformed goal request; nothing was deployed",
    ),
    401: error('Who submits the plan cannot be told (`plangate serve --identity header` without the header)'),
    403: error(
      "The platform's policy denies this submitter this plan (`policies`: the ids of the policies that decided)",
    ),
    409: error(
      'This plan id and version was already submitted with other content (the message names both digests): bump the version',
    ),
    413: error(BODY_TOO_LARGE),
    501: error('A goal, and this platform has no planner: submit a plan'),
  },
  'GET /drafts/{draftId}': {
    200: { description: 'The draft', content: { 'application/json': 'Draft' } },
    400: error('A malformed path'),
    403: error("The platform's policy (ReadDraft) denies this caller (`policies`: the ids that decided)"),
    404: error('No such draft'),
  },
  'GET /plans/{executionId}': {
    200: {
      description: "The execution's status and step progress",
      content: { 'application/json': 'Status' },
    },
    400: error('A malformed path'),
    403: error("The platform's policy (ReadExecution) denies this caller (`policies`: the ids that decided)"),
    404: error('No such execution'),
  },
  'GET /executions/{executionId}/events': {
    200: { description: 'The journal events, in order', content: { 'application/json': 'Events' } },
    400: error('A malformed path'),
    403: error("The platform's policy (ReadExecution) denies this caller (`policies`: the ids that decided)"),
    404: error('No such execution (it has no events)'),
  },
  'GET /executions/{executionId}/progress': {
    200: {
      description:
        'Server-Sent Events: one per "[Task N/M] ✓/✗" line after `Last-Event-ID` (or `?after=`), id = its sequence number; then `event: end` with the summary once the execution is complete, else `retry: 1000`',
      content: { 'text/event-stream': { inline: { type: 'string' } } },
    },
    400: error('A malformed path'),
    403: error("The platform's policy (ReadExecution) denies this caller (`policies`: the ids that decided)"),
    404: error('No such execution (it has no events)'),
  },
  'GET /openapi.json': {
    200: {
      description: 'This document',
      content: { 'application/json': { inline: { type: 'object', description: 'An OpenAPI 3.1 document' } } },
    },
  },
  'GET /approvals/{approvalId}': {
    200: {
      description:
        'With `Accept: application/json`: the gate. Otherwise the approval page (a page handle with its session cookie), or the sign-in callback page',
      content: { 'application/json': 'GateView', ...HTML },
    },
    303: {
      description:
        'A signed link opened in a browser: redeemed into a page session (cookie `plangate_page`) and redirected to `/approvals/{handle}`',
      content: {},
    },
    ...LINK_REFUSALS,
  },
  'GET /approvals/{approvalId}/progress': {
    200: { description: "The run's progress, a page that reloads itself", content: { ...HTML } },
    ...LINK_REFUSALS,
  },
  'POST /approvals/{approvalId}': {
    200: {
      description: 'Recorded: what it did (JSON), or a page saying what happens next',
      content: { 'application/json': 'AnswerOutcome', ...HTML },
    },
    401: pageError('The request does not say who is answering'),
    ...LINK_REFUSALS,
    413: pageError(BODY_TOO_LARGE),
  },
  'POST /approvals/{approvalId}/as-recipient': {
    200: {
      description:
        'Recorded, as the recipient the link names: what it did (JSON), or a page saying what happens next',
      content: { 'application/json': 'AnswerOutcome', ...HTML },
    },
    ...LINK_REFUSALS,
    413: pageError(BODY_TOO_LARGE),
  },
  'POST /slack/interactions': {
    200: {
      description:
        "Acknowledged (an empty body), or a modal's errors for Slack to show (`response_action: errors`)",
      content: {
        'application/json': {
          inline: {
            type: 'object',
            properties: {
              response_action: { type: 'string', const: 'errors' },
              errors: { type: 'object', additionalProperties: { type: 'string' } },
            },
          },
        },
      },
    },
    400: error('No interaction payload, or no gate in the view'),
    401: error("Not signed with the Slack app's signing secret, or dated more than five minutes from now"),
    404: error('Slack is not configured'),
  },
};

/** What API Gateway itself answers (on AWS; `plangate serve`'s gateway the same), by who may call the route. */
function gatewayResponses(auth: RouteAuth): Responses {
  const byAuth: Record<RouteAuth, Responses> = {
    iam: {
      403: error(
        "SigV4 refused by the gateway: no signature ('Missing Authentication Token'), an unknown key, a signature that does not match (also a body changed after signing), or one older than 5 minutes",
      ),
    },
    jwt: { 401: error('No bearer JWT, or one the authorizer does not accept') },
    open: {},
  };
  return {
    ...byAuth[auth],
    413: error("A body over API Gateway's payload quota (10 MB): 'Request Entity Too Large'"),
    429: error("API Gateway on AWS: over the stage's throttling limit ('Too Many Requests'); retry later"),
    500: error("The handler failed: API Gateway's generic 'Internal Server Error', nothing internal"),
    503: error(
      "API Gateway on AWS: the handler did not answer in time ('Service Unavailable'); `plangate serve`: its store cannot be written (disk full, read-only file system), with the cause and the fix in `message` and `Retry-After` in seconds: new work is refused until a write succeeds, and nothing accepted before is lost; or it is at capacity (its requests under way and waiting are full: `Retry-After: 1`, nothing was done) or stopping",
    ),
  };
}

/** A route's own responses with the gateway's; where both answer a status, both are described. */
function responsesOf(route: ApiRoute): Responses {
  const own = RESPONSES[routeKey(route)];
  if (!own) throw new Error(`openapi: no responses described for ${routeKey(route)}`);
  const merged: Record<number, Response> = { ...own };
  for (const [status, gateway] of Object.entries(gatewayResponses(route.auth))) {
    const handler = merged[Number(status)];
    merged[Number(status)] = handler
      ? {
          description: `${handler.description}; or, from the gateway: ${gateway.description}`,
          content: { ...gateway.content, ...handler.content },
        }
      : gateway;
  }
  return merged;
}

const SECURITY: Record<RouteAuth, Record<string, string[]>[]> = {
  iam: [{ sigv4: [] }],
  jwt: [{ jwt: [] }],
  open: [],
};

const EXECUTION_ID = {
  description:
    'The execution: its name (the last part of its ARN, e.g. `3f2c…-…`), or its whole ARN URL-encoded (`arn%3Aaws%3Astates%3A…`)',
};
const PATH_PARAMETERS: Readonly<Record<string, { readonly description: string }>> = {
  executionId: EXECUTION_ID,
  draftId: { description: 'The draft id `POST /plans {goal}` answered' },
  approvalId: {
    description:
      "A link id (as in the gate's link, email or Slack button), or a page session's handle (`/approvals/{handle}` after the 303)",
  },
};

const ANSWER_BODY = {
  required: true,
  description:
    "The decision and the digest reviewed: JSON from a script, or the approval page's form. With a JSON body, refusals are JSON too",
  content: {
    'application/json': { schema: { $ref: '#/components/schemas/Answer' } },
    'application/x-www-form-urlencoded': { schema: { $ref: '#/components/schemas/AnswerForm' } },
  },
};
const REQUEST_BODIES: Readonly<Record<string, Record<string, unknown>>> = {
  'POST /plans': {
    required: true,
    description:
      'A plan document (JSON, YAML or Markdown per docs/plan-formats.md; the format from the content type or `?format=`, else guessed), or a goal `{goal, context}` for the planner to draft the plan from. At most 4 MiB',
    content: {
      'application/json': {
        schema: {
          oneOf: [{ $ref: '#/components/schemas/Plan' }, { $ref: '#/components/schemas/GoalRequest' }],
        },
      },
      'application/yaml': { schema: { type: 'string', description: 'The plan document in YAML' } },
      'text/markdown': {
        schema: { type: 'string', description: 'The plan document in Markdown (docs/plan-formats.md)' },
      },
    },
  },
  'POST /approvals/{approvalId}': ANSWER_BODY,
  'POST /approvals/{approvalId}/as-recipient': ANSWER_BODY,
  'POST /slack/interactions': {
    required: true,
    description: "Slack's interactivity payload (form field `payload`), signed by Slack",
    content: {
      'application/x-www-form-urlencoded': {
        schema: { type: 'object', properties: { payload: { type: 'string' } }, required: ['payload'] },
      },
    },
  },
};
const QUERY_PARAMETERS: Readonly<Record<string, readonly Record<string, unknown>[]>> = {
  'POST /plans': [
    {
      name: 'format',
      in: 'query',
      required: false,
      description: "The plan document's format, when the content type does not say it",
      schema: { type: 'string', enum: ['json', 'yaml', 'markdown'] },
    },
  ],
  'GET /executions/{executionId}/progress': [
    {
      name: 'after',
      in: 'query',
      required: false,
      description: 'Only the lines after this sequence number (as `Last-Event-ID`)',
      schema: { type: 'integer', minimum: 0 },
    },
  ],
};

function schemaOf(body: Body): Record<string, unknown> {
  return typeof body === 'string' ? { $ref: `#/components/schemas/${body}` } : body.inline;
}

/** The route key (`METHOD /path`) a route's responses are filed under. */
export const routeKey = (route: Pick<ApiRoute, 'method' | 'path'>): string => `${route.method} ${route.path}`;

export function openApiDocument(routes: readonly ApiRoute[] = API_ROUTES): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const key = routeKey(route);
    const parameters = [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
        name,
        in: 'path',
        required: true,
        ...(name && PATH_PARAMETERS[name] ? PATH_PARAMETERS[name] : {}),
        schema: { type: 'string' },
      })),
      ...(QUERY_PARAMETERS[key] ?? []),
    ];
    const requestBody = REQUEST_BODIES[key];
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method.toLowerCase()] = {
      operationId: key.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, ''),
      summary: route.summary,
      security: SECURITY[route.auth],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: Object.fromEntries(
        Object.entries(responsesOf(route)).map(([status, response]) => [
          status,
          {
            description: response.description,
            ...(Object.keys(response.content).length > 0
              ? {
                  content: Object.fromEntries(
                    Object.entries(response.content).map(([type, body]) => [
                      type,
                      { schema: schemaOf(body) },
                    ]),
                  ),
                }
              : {}),
          },
        ]),
      ),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'plangate',
      version: '1',
      description:
        "Launch plans, follow their progress and events, answer approval gates. Every refusal, the gateway's included, is an `Error` (`message`, and `error` and `problems` when a handler answered). docs/api.md walks through it.",
    },
    servers: [
      {
        url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
        description: "The CDK stack's HTTP API (API Gateway, `$default` stage)",
        variables: {
          apiId: { default: 'abcdef1234', description: 'The HTTP API id' },
          region: { default: 'us-east-1', description: 'The stack region' },
        },
      },
      {
        url: 'http://127.0.0.1:{port}',
        description: '`plangate serve` on this machine (the first line it prints is this URL)',
        variables: { port: { default: '8080', description: 'Its `--port` (default: any free port)' } },
      },
    ],
    paths,
    components: {
      schemas: {
        ...componentSchemas(RESPONSE_COMPONENTS, 'output'),
        ...componentSchemas(REQUEST_COMPONENTS, 'input'),
      },
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description:
            'AWS Signature Version 4, service `execute-api`, region of the API (`plangate serve`: us-east-1, keys of its --credentials); `x-amz-content-sha256` optional',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
        jwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: "An approver's ID token (Cognito, or the issuer `plangate serve --jwt-issuer` trusts)",
        },
      },
    },
  };
}
