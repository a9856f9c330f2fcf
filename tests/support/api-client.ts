/**
 * The HTTP API as its clients see it, for e2e tests: every response is checked as it arrives
 * against the OpenAPI document the API serves (`GET /openapi.json`), with an independent validator
 * (Ajv, JSON Schema 2020-12, with ajv-formats). A path no route of the document matches, a status
 * the route does not declare, a content type not declared for that status, or a body its schema
 * refuses fails the call, errors included: the document is the contract, not a sketch of it.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { type SigningCredentials, signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';

export interface ApiRequest {
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sign with SigV4 (execute-api, us-east-1) as this principal. */
  readonly signWith?: SigningCredentials;
  readonly signedAt?: Date;
  /** @default 'manual': a 303 is a response of the route, checked like any other */
  readonly redirect?: 'manual' | 'follow';
}

export interface ApiResponse {
  readonly status: number;
  /** The media type, without parameters. */
  readonly type: string;
  readonly headers: Headers;
  readonly text: string;
  json(): Record<string, unknown>;
}

/** A response the client saw and checked: the route template it matched and its status. */
export interface CheckedResponse {
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly type: string;
}

interface OpenApiDocument {
  readonly paths: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }>
  >;
}

const DOCUMENT_ID = 'https://plangate.invalid/openapi.json';

/** A JSON Pointer segment inside a URI fragment. */
const pointer = (...segments: string[]) =>
  segments.map((s) => encodeURIComponent(s.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');

export class ApiClient {
  /** Every response checked so far, in order. */
  readonly checked: CheckedResponse[] = [];
  private contract: Promise<{ doc: OpenApiDocument; ajv: Ajv2020 }> | undefined;

  constructor(readonly baseUrl: string) {}

  /** The served document, loaded once (its own response is checked against it too). */
  document(): Promise<OpenApiDocument> {
    return this.load().then((c) => c.doc);
  }

  async request(method: string, path: string, init: ApiRequest = {}): Promise<ApiResponse> {
    const url = new URL(path, this.baseUrl);
    const response = init.signWith
      ? await signedFetch(url, init.signWith, {
          method,
          ...(init.body !== undefined ? { body: init.body } : {}),
          ...(init.headers ? { headers: init.headers } : {}),
          ...(init.signedAt ? { signingDate: init.signedAt } : {}),
        })
      : await fetch(url, {
          method,
          headers: init.headers ?? {},
          redirect: init.redirect ?? 'manual',
          ...(init.body !== undefined ? { body: init.body } : {}),
        });
    const text = await response.text();
    const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    await this.check(method, url.pathname, response.status, type, text);
    return {
      status: response.status,
      type,
      headers: response.headers,
      text,
      json: () => JSON.parse(text) as Record<string, unknown>,
    };
  }

  private load(): Promise<{ doc: OpenApiDocument; ajv: Ajv2020 }> {
    this.contract ??= (async () => {
      const response = await fetch(new URL('/openapi.json', this.baseUrl));
      if (response.status !== 200) throw new Error(`GET /openapi.json answered ${response.status}`);
      const doc = (await response.json()) as OpenApiDocument;
      const ajv = new Ajv2020({ allErrors: true, strict: false });
      // A CommonJS module: its default export is the plugin's `default` property.
      formats.default(ajv);
      // The whole document as one resource: response schemas are addressed by JSON Pointer, and
      // their `#/components/...` references resolve inside it.
      ajv.addSchema({ ...doc, $id: DOCUMENT_ID });
      return { doc, ajv };
    })();
    return this.contract;
  }

  private async check(method: string, path: string, status: number, type: string, text: string) {
    const { doc, ajv } = await this.load();
    const verb = method.toLowerCase();
    const route = Object.keys(doc.paths).find(
      (template) =>
        doc.paths[template]?.[verb] !== undefined &&
        new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`).test(path),
    );
    const where = `${method} ${path} → ${status} ${type || '(no content type)'}: ${text.slice(0, 300)}`;
    if (!route) throw new Error(`OpenAPI: no route of the document matches ${where}`);
    const declared = doc.paths[route]?.[verb]?.responses?.[String(status)];
    if (!declared) throw new Error(`OpenAPI: ${method} ${route} declares no ${status}: ${where}`);
    const content = declared.content ?? {};
    if (Object.keys(content).length === 0) {
      if (text !== '') throw new Error(`OpenAPI: ${method} ${route} ${status} declares no body: ${where}`);
    } else {
      const schema = content[type]?.schema;
      if (!schema)
        throw new Error(`OpenAPI: ${method} ${route} ${status} declares no ${type} body: ${where}`);
      let body: unknown = text;
      if (type === 'application/json') {
        try {
          body = JSON.parse(text);
        } catch {
          throw new Error(`OpenAPI: the body is not JSON: ${where}`);
        }
      }
      const at = pointer('paths', route, verb, 'responses', String(status), 'content', type, 'schema');
      const validate = ajv.getSchema(`${DOCUMENT_ID}#/${at}`);
      if (!validate) throw new Error(`OpenAPI: cannot resolve the schema at #/${at}`);
      if (!validate(body))
        throw new Error(
          `OpenAPI: ${method} ${route} ${status} ${type} does not match the document: ${ajv.errorsText(validate.errors)}; ${where}`,
        );
    }
    this.checked.push({ method, route, status, type });
  }
}
