/**
 * The OpenAPI 3.1 document of plangate's HTTP API, generated from the route list
 * (lib/runtime/api/routes.ts) and the zod schemas of what each route answers
 * (plans-api-schemas.ts). Served at `GET /openapi.json`.
 */
import { z } from 'zod';
import { API_ROUTES, type ApiRoute } from '../runtime/api/routes.ts';
import {
  AnswerOutcomeSchema,
  DraftAcceptedSchema,
  DraftResponseSchema,
  ErrorResponseSchema,
  EventsResponseSchema,
  GateViewSchema,
  GoalRequestSchema,
  InvalidPlanResponseSchema,
  JsonAnswerSchema,
  StatusResponseSchema,
  SubmitResponseSchema,
} from './plans-api-schemas.ts';

const COMPONENTS = {
  Error: ErrorResponseSchema,
  InvalidPlan: InvalidPlanResponseSchema,
  Submitted: SubmitResponseSchema,
  GoalRequest: GoalRequestSchema,
  DraftAccepted: DraftAcceptedSchema,
  Draft: DraftResponseSchema,
  Status: StatusResponseSchema,
  Events: EventsResponseSchema,
  GateView: GateViewSchema,
  JsonAnswer: JsonAnswerSchema,
  AnswerOutcome: AnswerOutcomeSchema,
} as const;
type ComponentName = keyof typeof COMPONENTS;

/** A response body: a component, or an inline JSON Schema for non-JSON media. */
type Body = ComponentName | { readonly inline: Record<string, unknown> };
type Responses = Readonly<Record<number, Readonly<Record<string, Body>>>>;

const HTML = { 'text/html': { inline: { type: 'string' } } } as const;
const errors = (...statuses: number[]): Responses =>
  Object.fromEntries(statuses.map((status) => [status, { 'application/json': 'Error' as const }]));
const pageErrors = (...statuses: number[]): Responses =>
  Object.fromEntries(statuses.map((status) => [status, { 'application/json': 'Error' as const, ...HTML }]));

/** What each route answers, by status and media type. */
const RESPONSES: Readonly<Record<string, Responses>> = {
  'POST /plans': {
    201: { 'application/json': 'Submitted' },
    202: { 'application/json': 'DraftAccepted' },
    // 409: this plan id and version was already submitted with other content (bump the version).
    // 413: a body over MAX_BODY_BYTES (4 MiB), the limit named in `message`.
    // 403: the platform's policy denies this submitter this plan (`policies`: the ids that decided).
    ...errors(401, 403, 409, 413, 501),
    // 400: every problem located, the validator's and Step Functions' quotas' (definition-too-large,
    // payload-too-large, history-too-long): nothing was deployed.
    400: {
      'application/json': {
        inline: {
          anyOf: [{ $ref: '#/components/schemas/InvalidPlan' }, { $ref: '#/components/schemas/Error' }],
        },
      },
    },
  },
  // 403 on the reads: the platform's policy (ReadDraft, ReadExecution) denies this caller.
  'GET /drafts/{draftId}': { 200: { 'application/json': 'Draft' }, ...errors(403, 404) },
  'GET /plans/{executionId}': { 200: { 'application/json': 'Status' }, ...errors(403, 404) },
  'GET /executions/{executionId}/events': { 200: { 'application/json': 'Events' }, ...errors(403, 404) },
  'GET /executions/{executionId}/progress': {
    200: { 'text/event-stream': { inline: { type: 'string' } } },
    ...errors(403, 404),
  },
  'GET /openapi.json': { 200: { 'application/json': { inline: { type: 'object' } } } },
  'GET /approvals/{approvalId}': {
    200: { 'application/json': 'GateView', ...HTML },
    // A signed link opened in a browser: redeemed into a page session, redirected to its handle.
    303: {},
    ...pageErrors(400, 403, 404, 405, 409, 410),
  },
  'GET /approvals/{approvalId}/progress': { 200: { ...HTML }, ...pageErrors(403, 404, 410) },
  'POST /approvals/{approvalId}': {
    200: { 'application/json': 'AnswerOutcome', ...HTML },
    ...pageErrors(400, 401, 403, 404, 405, 409, 410, 413),
  },
  'POST /slack/interactions': {
    200: { 'application/json': { inline: { type: 'object' } } },
    ...errors(400, 401),
  },
  'POST /approvals/{approvalId}/as-recipient': {
    200: { 'application/json': 'AnswerOutcome', ...HTML },
    ...pageErrors(400, 403, 404, 409, 410, 413),
  },
};

const SECURITY: Record<ApiRoute['auth'], Record<string, string[]>[]> = {
  iam: [{ sigv4: [] }],
  jwt: [{ jwt: [] }],
  open: [],
};

const REQUEST_BODIES: Readonly<Record<string, Record<string, unknown>>> = {
  'POST /slack/interactions': {
    required: true,
    description: "Slack's interactivity payload (form field `payload`), signed by Slack",
    content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } },
  },
  'POST /plans': {
    required: true,
    description:
      'The plan document: JSON, YAML or Markdown (seed 004), by content type or ?format=; or a goal ({goal, context}) for the planner to draft the plan from',
    content: {
      'application/json': {
        schema: { anyOf: [{ type: 'object' }, { $ref: '#/components/schemas/GoalRequest' }] },
      },
      'application/yaml': { schema: { type: 'string' } },
      'text/markdown': { schema: { type: 'string' } },
    },
  },
};
const ANSWER_BODY = {
  required: true,
  content: {
    'application/json': { schema: { $ref: '#/components/schemas/JsonAnswer' } },
    'application/x-www-form-urlencoded': { schema: { type: 'object' } },
  },
};

function schemaOf(body: Body): Record<string, unknown> {
  return typeof body === 'string' ? { $ref: `#/components/schemas/${body}` } : body.inline;
}

/** The route key (`METHOD /path`) a response schema is filed under. */
export const routeKey = (route: Pick<ApiRoute, 'method' | 'path'>): string => `${route.method} ${route.path}`;

export function openApiDocument(routes: readonly ApiRoute[] = API_ROUTES): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const key = routeKey(route);
    const responses = RESPONSES[key];
    if (!responses) throw new Error(`openapi: no responses described for ${key}`);
    const parameters = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const requestBody =
      REQUEST_BODIES[key] ??
      (route.method === 'POST' && route.handler === 'approvals' ? ANSWER_BODY : undefined);
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method.toLowerCase()] = {
      operationId: key.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, ''),
      summary: route.summary,
      security: SECURITY[route.auth],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: Object.fromEntries(
        Object.entries(responses).map(([status, media]) => [
          status,
          {
            description: `HTTP ${status}`,
            content: Object.fromEntries(
              Object.entries(media).map(([type, body]) => [type, { schema: schemaOf(body) }]),
            ),
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
      description: 'Launch plans, follow their progress and events, answer approval gates.',
    },
    paths,
    components: {
      schemas: Object.fromEntries(
        Object.entries(COMPONENTS).map(([name, schema]) => {
          const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
            io: 'output',
            unrepresentable: 'any',
          });
          return [name, json];
        }),
      ),
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description: 'AWS Signature Version 4 (service execute-api)',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
        jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
  };
}
