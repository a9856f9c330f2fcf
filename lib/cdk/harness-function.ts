/**
 * One harness Lambda of the catalog (lib/runtime/catalog.ts): its module from lambdas/ bundled by
 * esbuild into a single ESM file for Node 20 on arm64, with X-Ray tracing (unless its catalog entry
 * says not), a log group whose retention we own, and only the environment variables its schema lists.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Role } from 'aws-cdk-lib/aws-iam';
import { Architecture, type FileSystem, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SHELL_WASM_FILES, shellWasmPath } from '../plan/shell/wasm-files.ts';
import { CEDAR_WASM_FILE, cedarWasmPath } from '../policy/cedar.ts';
import { POLICY_DIR_ENV } from '../policy/policy-set.ts';
import {
  type CommonHandlerEnvInput,
  HARNESS_HANDLERS,
  type HandlerEnvInput,
  type HarnessHandlerName,
  type HarnessHandlerSpec,
} from '../runtime/catalog.ts';
import { handlerEntry, LOCK_FILE, PROJECT_ROOT } from './paths.ts';
import { trustedService } from './service-trust.ts';

/** The variables every harness Lambda reads (the journal's tables and bus, Powertools' settings). */
export type CommonEnvInput = CommonHandlerEnvInput;

export interface HarnessFunctionProps<N extends HarnessHandlerName> {
  /** The catalog entry: module, description, memory, timeout and environment schema. */
  readonly handler: N;
  /**
   * @default RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: RetentionDays;
  /**
   * What happens to the log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * What every harness Lambda reads; the handler's own variables are set with `setEnvironment`.
   * @default {}
   */
  readonly environment?: CommonEnvInput | HandlerEnvInput<N>;
  /**
   * The platform's Cedar policies (a directory of .cedar files and optionally groups.json and people.json):
   * copied into the bundle as `policies/`, named by PLANGATE_POLICY_DIR, and read once per
   * container by every decision the function makes.
   * @default - the function reads the policies its environment names, else the shipped set
   */
  readonly policyDir?: string;
  /**
   * The function is invoked asynchronously (`InvocationType: Event`): an event Lambda gives up on
   * (its retries spent, or too old) goes to the function's dead-letter queue instead of being
   * dropped.
   * @default false
   */
  readonly invokedAsynchronously?: boolean;
  /**
   * The network the function runs in, with the subnets it gets (the plan-process function's,
   * which mounts the workspace file system: lib/cdk/plan-code.ts). The role then needs its own
   * network-interface grants (this construct's role is its own, not Lambda's managed one).
   * @default - none: Lambda's own network
   */
  readonly vpc?: { readonly vpc: IVpc; readonly subnets: SubnetSelection };
  /**
   * A file system the function mounts (needs `vpc`).
   * @default - none
   */
  readonly filesystem?: FileSystem;
}

/** Where a bundle keeps its copy of the platform's policies (relative to the function's code). */
export const BUNDLED_POLICY_DIR = 'policies';

/**
 * ESM bundles still contain CommonJS dependencies that call `require` for Node built-ins;
 * esbuild's ESM output has no `require`, so the banner provides one.
 */
const ESM_REQUIRE_SHIM =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

/**
 * The shell parser (lib/plan/shell) loads two .wasm files, which esbuild does not bundle: a bundle
 * that contains the parser (it names its grammar file) gets both copied beside it.
 */
function copyShellWasm(outputDir: string): string[] {
  const [grammar] = SHELL_WASM_FILES;
  const copies = SHELL_WASM_FILES.map(
    ({ specifier, file }) => `cp "${shellWasmPath(specifier, file)}" "${outputDir}/${file}"`,
  ).join(' && ');
  return [`if grep -qs "${grammar.file}" "${outputDir}"/index.*; then ${copies}; fi`];
}

/**
 * Cedar (lib/policy) loads its .wasm file, which esbuild does not bundle: a bundle that contains
 * Cedar gets it copied beside it, and the platform's policy directory with it.
 */
function copyCedar(outputDir: string, policyDir: string | undefined): string[] {
  const copies = [
    `cp "${cedarWasmPath()}" "${outputDir}/${CEDAR_WASM_FILE}"`,
    ...(policyDir ? [`cp -R "${policyDir}" "${outputDir}/${BUNDLED_POLICY_DIR}"`] : []),
  ].join(' && ');
  return [`if grep -qs "${CEDAR_WASM_FILE}" "${outputDir}"/index.*; then ${copies}; fi`];
}

export class HarnessFunction<N extends HarnessHandlerName = HarnessHandlerName> extends Construct {
  /** The handler's name in the catalog. */
  public readonly handler: N;
  public readonly function: NodejsFunction;
  public readonly logGroup: LogGroup;
  /** The function's own role: write to its log group, X-Ray (where traced), and whatever the platform grants. */
  public readonly role: Role;
  /**
   * Where the asynchronous events it failed on go (SQS-encrypted, TLS only, kept 14 days), with
   * `invokedAsynchronously` only.
   */
  public readonly deadLetterQueue?: Queue;

  constructor(scope: Construct, id: string, props: HarnessFunctionProps<N>) {
    super(scope, id);
    this.handler = props.handler;
    const spec: HarnessHandlerSpec = HARNESS_HANDLERS[props.handler];
    const traced = spec.traced ?? true;
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.THREE_MONTHS,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Our own role instead of AWSLambdaBasicExecutionRole: logs go to this function's log group only.
    // Lambda names no source ARN we could know here (function names are generated), so the trust
    // is held to this account.
    this.role = new Role(this, 'Role', {
      assumedBy: trustedService(this, 'lambda.amazonaws.com'),
      description: spec.description,
    });
    this.logGroup.grantWrite(this.role);
    if (props.invokedAsynchronously)
      this.deadLetterQueue = new Queue(this, 'DeadLetters', {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
    this.function = new NodejsFunction(this, 'Function', {
      role: this.role,
      entry: handlerEntry(spec.entry),
      handler: 'handler',
      description: spec.description,
      // The bundle uses only Node 20 APIs (what the project tests on); Lambda runs it on the current runtime
      // because nodejs20.x is deprecated there.
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: spec.memoryMb,
      timeout: Duration.seconds(spec.timeoutSeconds),
      tracing: traced ? Tracing.ACTIVE : Tracing.DISABLED,
      logGroup: this.logGroup,
      ...(props.vpc ? { vpc: props.vpc.vpc, vpcSubnets: props.vpc.subnets } : {}),
      ...(props.filesystem ? { filesystem: props.filesystem } : {}),
      ...(this.deadLetterQueue ? { deadLetterQueue: this.deadLetterQueue } : {}),
      // Nothing is installed into a bundle (externalModules is empty): the lock file only roots the
      // project, whose directory esbuild runs in. Installed in an app, CDK finds the app's.
      ...(LOCK_FILE ? { projectRoot: PROJECT_ROOT, depsLockFilePath: LOCK_FILE } : {}),
      bundling: {
        format: OutputFormat.ESM,
        target: 'node20', // the oldest Node the bundle must run on
        platform: 'node',
        mainFields: ['module', 'main'],
        // Bundle everything, the AWS SDK included: the SDK version that runs is the one we tested.
        externalModules: [],
        banner: ESM_REQUIRE_SHIM,
        minify: true,
        // Stack traces name our files and lines; the bundle does not ship our sources a second time.
        sourceMap: true,
        sourcesContent: false,
        forceDockerBundling: false,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_inputDir, outputDir) => [
            ...copyShellWasm(outputDir),
            ...copyCedar(outputDir, props.policyDir),
          ],
        },
      },
    });
    this.setEnvironment({
      NODE_OPTIONS: '--enable-source-maps',
      ...(props.policyDir ? { [POLICY_DIR_ENV]: BUNDLED_POLICY_DIR } : {}),
      ...props.environment,
    } as HandlerEnvInput<N>);
    if (traced)
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray active tracing: xray:PutTraceSegments/PutTelemetryRecords/GetSampling* support only Resource "*" (no resource-level permissions).',
      });
  }

  /** Sets variables of the handler's environment schema (a name it does not list does not compile). */
  setEnvironment(values: HandlerEnvInput<N>): void {
    for (const [name, value] of Object.entries(values) as [string, string | undefined][])
      if (value !== undefined) this.function.addEnvironment(name, value);
  }
}
