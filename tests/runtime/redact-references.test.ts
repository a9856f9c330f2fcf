// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Redactor } from '../../lib/runtime/secrets/redact.ts';
import { resolveReferences } from '../../lib/runtime/secrets/references.ts';
import { SecretSource } from '../../lib/runtime/secrets/secrets.ts';

describe('Redactor', () => {
  it('never lets a declared secret through, wherever it sits in a string', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 4, maxLength: 40 }),
        fc.string(),
        fc.string(),
        (secret, before, after) => {
          const out = new Redactor([secret]).text(before + secret + after);
          expect(out.includes(secret)).toBe(false);
        },
      ),
    );
  });

  it('redacts credential shapes nobody declared', () => {
    const r = new Redactor();
    const token = `AQ${'x'.repeat(200)}`;
    const text = r.text(
      `key AKIAIOSFODNN7EXAMPLE url https://bob:s3cr3t@example.com/x Authorization: Bearer eyJhbGciOi.abc password=hunter22 token ${token}`,
    );
    for (const leaked of ['AKIAIOSFODNN7EXAMPLE', 's3cr3t', 'eyJhbGciOi.abc', 'hunter22', token]) {
      expect(text).not.toContain(leaked);
    }
    expect(text).toContain('https://bob:***@example.com/x');
  });

  it('reads a 200 KB word in linear time (a gate shows such commands; it took a minute before)', () => {
    const r = new Redactor();
    for (const word of ['a'.repeat(200_000), 'a.'.repeat(100_000), `https://${'u'.repeat(200_000)}`]) {
      const started = performance.now();
      expect(r.text(word)).toBe(word);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    expect(r.text(`x ${'a'.repeat(50_000)} svn+ssh://bob:pw1234@host/x`)).toContain(
      'svn+ssh://bob:***@host/x',
    );
  });

  it('redacts nested values and whole values under credential keys', () => {
    expect(new Redactor(['topsecret']).value({ a: ['x topsecret y'], taskToken: 'anything', n: 1 })).toEqual({
      a: ['x *** y'],
      taskToken: '***',
      n: 1,
    });
  });
});

describe('resolveReferences', () => {
  const secrets = new SecretSource({
    secrets: [{ name: 'dbPass', source: 'env', ref: 'DB_PASS' }],
    env: { DB_PASS: 'pa55word!' },
  });
  const scope = {
    steps: { build: { image: 'app:1', port: 8080 } },
    context: { region: 'eu-west-1', cfg: { n: 2 } },
    secrets,
  };

  it('keeps the type of a whole-string reference and interpolates embedded ones', async () => {
    expect(
      await resolveReferences(
        {
          port: '${steps.build.port}',
          url: 'http://x:${steps.build.port}/${context.region}',
          n: ['${context.cfg.n}'],
          dsn: 'postgres://u:${secrets.dbPass}@db',
          shellVar: '${HOME}',
        },
        scope,
      ),
    ).toEqual({
      port: 8080,
      url: 'http://x:8080/eu-west-1',
      n: [2],
      dsn: 'postgres://u:pa55word!@db',
      shellVar: '${HOME}',
    });
    expect(secrets.resolvedValues).toEqual(['pa55word!']);
  });

  it('fails located and clear for missing steps, outputs, context keys and undeclared secrets', async () => {
    await expect(resolveReferences({ a: { b: '${steps.test.x}' } }, scope)).rejects.toMatchObject({
      name: 'InvalidInput',
      location: 'args.a.b',
      message: expect.stringContaining('no recorded outputs'),
    });
    await expect(resolveReferences('${steps.build.nope}', scope)).rejects.toThrow(/did not produce/);
    await expect(resolveReferences('${context.zone}', scope)).rejects.toThrow(/not set/);
    await expect(resolveReferences('${secrets.other}', scope)).rejects.toMatchObject({
      name: 'NotConfigured',
    });
  });

  it('says which environment variable a secret needs when it is unset', async () => {
    const missing = new SecretSource({ secrets: [{ name: 'k', source: 'env', ref: 'API_KEY' }], env: {} });
    await expect(
      resolveReferences('${secrets.k}', { steps: {}, context: {}, secrets: missing }),
    ).rejects.toThrow(/API_KEY, which is not set/);
  });
});
