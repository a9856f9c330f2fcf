import { StatesError } from '../types.ts';

/** What an AWS SDK v3 client throws for a service error. */
interface SdkServiceException {
  readonly name?: string;
  readonly message?: string;
  readonly $metadata?: { readonly httpStatusCode?: number; readonly requestId?: string };
}

function asSdkException(error: unknown): {
  code: string;
  message: string;
  status: number;
  requestId: string;
} {
  const e = (error ?? {}) as SdkServiceException;
  return {
    code: e.name ?? 'UnknownError',
    message: e.message ?? String(error),
    status: e.$metadata?.httpStatusCode ?? 500,
    requestId: e.$metadata?.requestId ?? '',
  };
}

/** True for failures that never reached the service (connection refused, DNS, ...), which AWS names SdkClientException. */
function isClientFailure(error: unknown): boolean {
  const e = error as SdkServiceException & { code?: string };
  return e?.$metadata?.httpStatusCode === undefined && !(e?.name ?? '').endsWith('Exception');
}

/**
 * How Step Functions' optimized integrations (Java SDK v1) name a service error: the modeled
 * exception's name, or `<Prefix>.Amazon<Service>Exception` for unmodeled ones (e.g. ValidationException).
 */
export function optimizedIntegrationError(
  error: unknown,
  prefix: string,
  serviceName: string,
  modeled: ReadonlySet<string>,
): StatesError {
  if (isClientFailure(error)) {
    return new StatesError(
      `${prefix}.SdkClientException`,
      `Unable to execute HTTP request: ${asSdkException(error).message}`,
    );
  }
  const { code, message, status, requestId } = asSdkException(error);
  const name = modeled.has(code) ? code : `Amazon${serviceName}Exception`;
  return new StatesError(
    `${prefix}.${name}`,
    `${message} (Service: Amazon${serviceName}v2; Status Code: ${status}; Error Code: ${code}; Request ID: ${requestId}; Proxy: null)`,
  );
}

/**
 * How AWS SDK integrations (`arn:aws:states:::aws-sdk:<service>:<action>`, Java SDK v2) name a
 * service error: `<Service>.<ExceptionName>`, or `<Service>.<Service>Exception` for unmodeled ones.
 */
export function awsSdkIntegrationError(
  error: unknown,
  service: string,
  modeled: ReadonlySet<string>,
): StatesError {
  if (isClientFailure(error)) {
    return new StatesError(
      `${service}.SdkClientException`,
      `Unable to execute HTTP request: ${asSdkException(error).message}`,
    );
  }
  const { code, message, status, requestId } = asSdkException(error);
  const name = modeled.has(code) ? code : `${service}Exception`;
  return new StatesError(
    `${service}.${name}`,
    `${message} (Service: ${service}, Status Code: ${status}, Request ID: ${requestId})`,
  );
}
