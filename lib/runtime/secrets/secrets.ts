/**
 * Secret resolution at call time. A secret is referenced by name in the plan and resolved
 * from the environment or Secrets Manager only when a tool runs; the value goes to the
 * tool and to the redactor, nowhere else.
 */
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { z } from 'zod';
import type { SecretRefSchema } from '../../plan/schema.ts';
import { NotConfiguredError } from '../shared/errors.ts';

export type SecretRef = z.infer<typeof SecretRefSchema>;

export interface SecretSourceProps {
  /** The plan's declared secrets. */
  readonly secrets: readonly SecretRef[];
  /**
   * Where `env` secrets are read from.
   * @default process.env
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Needed only when a `secretsmanager` secret is referenced. */
  readonly secretsManager?: SecretsManagerClient;
}

/** Resolves declared secrets by name, caching each value for the life of one invocation. */
export class SecretSource {
  private readonly cache = new Map<string, string>();

  constructor(private readonly props: SecretSourceProps) {}

  /**
   * What the redactor must hide: every value resolved so far, and every declared `env` secret that
   * is set, resolved or not (reading the environment costs nothing, and a tool's child process may
   * have inherited it).
   */
  get resolvedValues(): string[] {
    const env = this.props.env ?? process.env;
    const inherited = this.props.secrets
      .filter((s) => s.source === 'env')
      .map((s) => env[s.ref])
      .filter((v): v is string => v !== undefined && v !== '');
    return [...new Set([...this.cache.values(), ...inherited])];
  }

  async resolve(name: string, location = `\${secrets.${name}}`): Promise<string> {
    const cached = this.cache.get(name);
    if (cached !== undefined) return cached;
    const ref = this.props.secrets.find((s) => s.name === name);
    if (!ref) {
      throw new NotConfiguredError(`secret "${name}" is not declared in the plan's secrets`, { location });
    }
    const value =
      ref.source === 'env' ? this.fromEnv(ref, location) : await this.fromSecretsManager(ref, location);
    this.cache.set(name, value);
    return value;
  }

  private fromEnv(ref: SecretRef, location: string): string {
    const value = (this.props.env ?? process.env)[ref.ref];
    if (value === undefined || value === '') {
      throw new NotConfiguredError(
        `secret "${ref.name}" reads environment variable ${ref.ref}, which is not set; set it before running`,
        { location },
      );
    }
    return value;
  }

  private async fromSecretsManager(ref: SecretRef, location: string): Promise<string> {
    if (!this.props.secretsManager) {
      throw new NotConfiguredError(
        `secret "${ref.name}" lives in Secrets Manager but no client is configured`,
        {
          location,
        },
      );
    }
    const out = await this.props.secretsManager.send(new GetSecretValueCommand({ SecretId: ref.ref }));
    if (out.SecretString === undefined) {
      throw new NotConfiguredError(`secret "${ref.name}" (${ref.ref}) has no string value`, { location });
    }
    return out.SecretString;
  }
}
