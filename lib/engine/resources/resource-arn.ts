/** What a Task state's Resource names, as the invoker dispatches it. */
export type ResourceTarget =
  | { readonly kind: 'lambda-function' }
  | {
      readonly kind: 'integration';
      readonly service: string;
      readonly action: string;
      readonly pattern: IntegrationPattern;
    }
  | {
      readonly kind: 'aws-sdk';
      readonly service: string;
      readonly action: string;
      readonly pattern: IntegrationPattern;
    }
  | { readonly kind: 'unknown' };

export type IntegrationPattern = 'request-response' | 'wait-for-task-token' | 'sync';

/** Parses `arn:aws:states:::<service>:<action>[.waitForTaskToken|.sync[:2]]`, `...:::aws-sdk:<service>:<action>` and function ARNs. */
export function parseResource(resource: string): ResourceTarget {
  const parts = resource.split(':');
  if (parts[0] !== 'arn' || parts.length < 6) return { kind: 'unknown' };
  if (parts[2] === 'lambda' && parts[5] === 'function' && (parts[6] ?? '') !== '')
    return { kind: 'lambda-function' };
  if (parts[2] !== 'states' || parts[3] !== '' || parts[4] !== '') return { kind: 'unknown' };
  const rest = parts.slice(5);
  const isSdk = rest[0] === 'aws-sdk';
  const [service = '', actionWithSuffix = '', suffixTail] = isSdk ? rest.slice(1) : rest;
  const [action = '', suffix] = actionWithSuffix.split('.');
  const pattern: IntegrationPattern | undefined =
    suffix === undefined
      ? 'request-response'
      : suffix === 'waitForTaskToken'
        ? 'wait-for-task-token'
        : suffix === 'sync' && (suffixTail === undefined || suffixTail === '2')
          ? 'sync'
          : undefined;
  if (!pattern || service === '' || action === '' || (suffixTail !== undefined && suffix !== 'sync'))
    return { kind: 'unknown' };
  return isSdk
    ? { kind: 'aws-sdk', service, action, pattern }
    : { kind: 'integration', service, action, pattern };
}
