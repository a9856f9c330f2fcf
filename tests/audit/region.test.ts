/** `plangate audit --aws` picks its region as the AWS CLI does (issue 32). */
import { describe, expect, it } from 'vitest';
import { awsRegion } from '../../lib/audit/target.ts';

describe('awsRegion', () => {
  it('takes --region, else AWS_REGION, else AWS_DEFAULT_REGION', () => {
    expect(awsRegion('eu-west-1', { AWS_REGION: 'us-east-1', AWS_DEFAULT_REGION: 'us-west-2' })).toBe(
      'eu-west-1',
    );
    expect(awsRegion(undefined, { AWS_REGION: 'us-east-1', AWS_DEFAULT_REGION: 'us-west-2' })).toBe(
      'us-east-1',
    );
    expect(awsRegion(undefined, { AWS_DEFAULT_REGION: 'us-west-2' })).toBe('us-west-2');
    expect(awsRegion(undefined, {})).toBeUndefined();
  });
});
