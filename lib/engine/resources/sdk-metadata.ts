/**
 * The `SdkHttpMetadata` / `SdkResponseMetadata` that Step Functions' optimized integrations
 * (lambda:invoke, dynamodb:*) add to a service response, built from the response headers.
 */
export interface SdkMetadata {
  readonly SdkHttpMetadata: {
    readonly AllHttpHeaders: Record<string, string[]>;
    readonly HttpHeaders: Record<string, string>;
    readonly HttpStatusCode: number;
  };
  readonly SdkResponseMetadata: { readonly RequestId: string };
}

/** AWS's spelling of the headers these services send (Node lower-cases what it receives). */
const HEADER_CASE: Readonly<Record<string, string>> = {
  connection: 'Connection',
  'content-length': 'Content-Length',
  'content-type': 'Content-Type',
  date: 'Date',
  server: 'Server',
  'x-amz-crc32': 'x-amz-crc32',
  'x-amzn-requestid': 'x-amzn-RequestId',
  'x-amz-executed-version': 'X-Amz-Executed-Version',
  'x-amzn-remapped-content-length': 'x-amzn-Remapped-Content-Length',
  'x-amzn-trace-id': 'X-Amzn-Trace-Id',
};

export function sdkMetadata(
  headers: Record<string, string>,
  statusCode: number,
  requestId: string,
): SdkMetadata {
  const HttpHeaders: Record<string, string> = {};
  const AllHttpHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const spelled = HEADER_CASE[name.toLowerCase()] ?? name;
    HttpHeaders[spelled] = value;
    AllHttpHeaders[spelled] = [value];
  }
  return {
    SdkHttpMetadata: { AllHttpHeaders, HttpHeaders, HttpStatusCode: statusCode },
    SdkResponseMetadata: { RequestId: requestId },
  };
}
