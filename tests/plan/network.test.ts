/**
 * A step's `network.hosts`: declared in canonical form (located refusals saying how to write it),
 * and matched after the client's spelling is canonicalised, so every spelling of a declared host
 * is allowed and no spelling of an undeclared one is (upper case, trailing dot, %2E, full-width
 * dots, Unicode). Addresses of this machine and its networks are never declarable.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalHost,
  hostRules,
  isDeclared,
  networkLine,
  parseHostEntry,
  reservedRange,
} from '../../lib/plan/network.ts';
import { parsePlanText } from '../../lib/plan/parse.ts';
import { validatePlan } from '../../lib/plan/validate.ts';

const rules = hostRules({ hosts: ['api.github.com', '*.pypi.org', 'xn--bcher-kva.example:8443'] });

/** Ways a client may spell the same name: upper case, trailing dot, %2E, full-width/ideographic dots. */
const spelling = (host: string) =>
  fc
    .tuple(
      fc.array(fc.boolean(), { minLength: host.length, maxLength: host.length }),
      fc.array(fc.constantFrom('.', '%2E', '%2e', '\uFF0E', '\u3002', '\uFF61'), {
        minLength: host.split('.').length,
        maxLength: host.split('.').length,
      }),
      fc.boolean(),
    )
    .map(([upper, dots, trailing]) => {
      const cased = [...host].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
      const labels = cased.split('.');
      return (
        labels.map((label, i) => (i === 0 ? label : `${dots[i] ?? '.'}${label}`)).join('') +
        (trailing ? '.' : '')
      );
    });

const allowedOf = (asked: string, port: number) => {
  const host = canonicalHost(asked);
  return host !== undefined && isDeclared(rules, host, port);
};

describe('declared hosts', () => {
  it('allow every spelling of a declared host', () => {
    fc.assert(
      fc.property(spelling('api.github.com'), fc.constantFrom(443, 80), (asked, port) => {
        expect(allowedOf(asked, port), asked).toBe(true);
      }),
    );
    fc.assert(
      fc.property(spelling('files.pypi.org'), (asked) => {
        expect(allowedOf(asked, 443), asked).toBe(true);
      }),
    );
  });

  it('refuse every spelling of an undeclared one', () => {
    for (const host of ['api.github.com.evil.example', 'pypi.org', 'evilpypi.org', 'github.com', 'localhost'])
      fc.assert(
        fc.property(spelling(host), (asked) => {
          expect(allowedOf(asked, 443), asked).toBe(false);
        }),
      );
  });

  it('match an IDNA name in its Unicode spelling, and a declared port only', () => {
    expect(allowedOf('bücher.example', 8443)).toBe(true);
    expect(allowedOf('BÜCHER.example.', 8443)).toBe(true);
    expect(allowedOf('bücher.example', 443)).toBe(false);
    expect(allowedOf('api.github.com', 22)).toBe(false);
  });

  it('never read a user, a path or a port out of what was asked as a host', () => {
    for (const asked of [
      'api.github.com@evil.example',
      'evil.example/api.github.com',
      'api.github.com:1',
      '',
    ])
      expect(canonicalHost(asked), asked).toBeUndefined();
  });

  it('are written canonically, or refused saying how', () => {
    const problem = (entry: string) => {
      const parsed = parseHostEntry(entry);
      return 'problem' in parsed ? parsed.problem : undefined;
    };
    expect(problem('API.GitHub.com')).toMatch(/write api\.github\.com/);
    expect(problem('api.github.com.')).toMatch(/trailing dot \(api\.github\.com\)/);
    expect(problem('bücher.example')).toMatch(/write xn--bcher-kva\.example/);
    expect(problem('api%2Egithub.com')).toMatch(/write api\.github\.com/);
    expect(problem('*.*.pypi.org')).toMatch(/only wildcard/);
    expect(problem('files.*.org')).toMatch(/only wildcard/);
    expect(problem('*.org')).toMatch(/top-level domain/);
    expect(problem('api.github.com:0')).toMatch(/port/);
    expect(problem('https://api.github.com')).toBeDefined();
    for (const ok of [
      'api.github.com',
      '*.pypi.org',
      'api.github.com:8443',
      '1.1.1.1',
      '[2606:4700::1111]:443',
    ])
      expect(problem(ok), ok).toBeUndefined();
  });

  it('refuse IP literals of this machine and its networks, however they are spelled', () => {
    for (const entry of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '0.0.0.0',
      '[::1]',
      '[fe80::1]',
      '[fd00::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:a9fe:a9fe]',
      '[64:ff9b::a00:1]',
      'localhost',
      '*.localhost',
      'app.localhost:8080',
    ])
      expect(parseHostEntry(entry), entry).toMatchObject({
        problem: expect.stringMatching(/may never reach/),
      });
    // Other spellings of 127.0.0.1 canonicalise to it first (then refused as not canonical, saying so).
    expect(canonicalHost('0x7f.1')).toBe('127.0.0.1');
    expect(canonicalHost('2130706433')).toBe('127.0.0.1');
    expect(reservedRange('8.8.8.8')).toBeUndefined();
    expect(reservedRange('2606:4700::1111')).toBeUndefined();
    expect(reservedRange('::ffff:7f00:1')).toBe('loopback');
  });

  it('are refused by the validator at their entry', async () => {
    const document = {
      id: 'fetch',
      objective: 'Fetch the release notes',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'get',
          description: 'Fetch the notes',
          tool: 'shell',
          args: { command: 'true' },
          contract: { kind: 'command', command: 'true' },
          network: { hosts: ['api.github.com', 'API.example.com.'] },
        },
      ],
    };
    const text = JSON.stringify(document, null, 2);
    const parsed = parsePlanText(text, { filename: 'plan.json' });
    if (!parsed.plan) throw new Error('parse failed');
    const result = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap, checkShell: false });
    const problems = result.problems.filter((p) => p.code === 'network-host');
    expect(problems).toHaveLength(1);
    const line = text.split('\n').findIndex((l) => l.includes('API.example.com.')) + 1;
    expect(problems[0]?.location.line).toBe(line);
    expect(problems[0]?.message).toMatch(/trailing dot/);
  });

  it('are a Markdown step field too, refused at their line', async () => {
    const text = [
      '---',
      'min_steps: 1',
      '---',
      '# Fetch notes',
      '',
      '**Objective:** Fetch the release notes',
      '',
      '## Steps',
      '',
      '### 1. Fetch the notes',
      '**tool:** shell',
      '**args:** {command: "true"}',
      '**network:** {hosts: [api.github.com, "*.PyPI.org"]}',
      '**contract:** `true`',
    ].join('\n');
    const parsed = parsePlanText(text, { filename: 'plan.md' });
    if (!parsed.plan) throw new Error(parsed.problems.map((p) => p.message).join('; '));
    expect(parsed.plan.steps[0]?.network).toEqual({ hosts: ['api.github.com', '*.PyPI.org'] });
    const result = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap, checkShell: false });
    const problem = result.problems.find((p) => p.code === 'network-host');
    expect(problem?.message).toMatch(/write \*\.pypi\.org/);
    expect(problem?.location.line).toBe(13);
  });

  it('read at the gate as one line', () => {
    expect(networkLine({ hosts: ['api.github.com', '*.pypi.org'] })).toBe(
      "may reach: api.github.com, *.pypi.org (through plangate's proxy)",
    );
  });
});
