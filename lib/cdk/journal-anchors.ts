/**
 * Where the journal's heads are anchored on AWS, as CloudTrail anchors its log files: a KMS
 * asymmetric key (ECC_NIST_P256, sign/verify) whose key policy lets only the anchor Lambda's role
 * sign, and an S3 bucket with Object Lock in compliance mode (versioned, a default retention no
 * one can shorten or lift, the account root included) the signed digests are written to. The
 * anchor Lambda reads the events table's stream; the journal's writers can neither sign nor
 * write here, so a history they rewrite cannot be re-anchored.
 */
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  AnyPrincipal,
  Effect,
  Grant,
  type IGrantable,
  type IRole,
  PolicyStatement,
} from 'aws-cdk-lib/aws-iam';
import { Key, KeySpec, KeyUsage } from 'aws-cdk-lib/aws-kms';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  ObjectLockRetention,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { EventsTable } from './events-table.ts';
import type { HarnessFunction } from './harness-function.ts';

export interface JournalAnchorsProps {
  readonly eventsTable: EventsTable;
  /** The anchor Lambda (lambdas/anchor.ts): the one principal that may sign and write digests. */
  readonly anchor: HarnessFunction<'anchor'>;
  /**
   * How long each digest is locked (compliance mode: nobody can delete or overwrite it before).
   * @default Duration.days(365 * 7)
   */
  readonly retention?: Duration;
  /**
   * Events per anchoring batch, and the longest wait for a batch to fill.
   * @default 100 events, 10 seconds
   */
  readonly batchSize?: number;
  readonly maxBatchingWindow?: Duration;
}

/** The object prefix digests are written under (lib/runtime/journal/s3-digests.ts). */
const DIGEST_PREFIX = 'digests/';

export class JournalAnchors extends Construct {
  public readonly key: Key;
  public readonly bucket: Bucket;
  /**
   * The stream's on-failure destination: where a batch the anchor Lambda could not anchor in its
   * retries is recorded (shard and sequence numbers, not the events), so a gap in the anchors is
   * seen. SQS-encrypted, TLS only, kept 14 days.
   */
  public readonly failureQueue: Queue;

  constructor(scope: Construct, id: string, props: JournalAnchorsProps) {
    super(scope, id);
    const role = props.anchor.role;
    this.key = new Key(this, 'SigningKey', {
      description:
        "plangate: signs the anchors of the journal's hash chain (only the anchor Lambda may sign)",
      keySpec: KeySpec.ECC_NIST_P256,
      keyUsage: KeyUsage.SIGN_VERIFY,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // The default key policy lets the account's IAM policies grant kms:Sign; this Deny leaves the anchor role the only signer.
    this.key.addToResourcePolicy(onlyRole('OnlyTheAnchorLambdaSigns', ['kms:Sign'], role, ['*']));
    Grant.addToPrincipal({ grantee: role, actions: ['kms:Sign'], resourceArns: [this.key.keyArn] });

    this.bucket = new Bucket(this, 'Digests', {
      versioned: true,
      objectLockEnabled: true,
      objectLockDefaultRetention: ObjectLockRetention.compliance(props.retention ?? Duration.days(365 * 7)),
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const digests = this.bucket.arnForObjects(`${DIGEST_PREFIX}*`);
    this.bucket.addToResourcePolicy(
      onlyRole('OnlyTheAnchorLambdaWrites', ['s3:PutObject'], role, [this.bucket.arnForObjects('*')]),
    );
    Grant.addToPrincipal({ grantee: role, actions: ['s3:PutObject'], resourceArns: [digests] });
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(this.bucket.node.defaultChild as never)}.Arn>/${DIGEST_PREFIX}*]`,
      reason:
        'One object per anchor, named by execution and sequence number at run time, under the digests/ prefix only.',
    });
    Validations.of(this.bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only the anchor Lambda can write here and Object Lock (compliance) keeps every object; a second, mutable log bucket would add nothing an auditor relies on (CloudTrail data events can record object access).',
    });

    props.anchor.setEnvironment({
      PLANGATE_ANCHOR_KEY_ARN: this.key.keyArn,
      PLANGATE_ANCHOR_BUCKET: this.bucket.bucketName,
    });
    this.failureQueue = new Queue(this, 'AnchorFailures', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.failureQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself a dead-letter destination: the events table stream's on-failure destination for the anchor Lambda (cdk-nag recognizes only queues and function DLQ settings).",
    });
    props.anchor.function.addEventSource(
      new DynamoEventSource(props.eventsTable.table, {
        onFailure: new SqsDlq(this.failureQueue),
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: props.batchSize ?? 100,
        maxBatchingWindow: props.maxBatchingWindow ?? Duration.seconds(10),
        bisectBatchOnError: true,
        retryAttempts: 10_000,
      }),
    );
  }

  /** What an auditor needs to check anchors: the key's public half, and the digests. */
  grantVerify(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['kms:GetPublicKey', 'kms:DescribeKey'],
      resourceArns: [this.key.keyArn],
    }).combine(this.bucket.grantRead(grantee, `${DIGEST_PREFIX}*`));
  }
}

/** A resource-policy Deny of `actions` to every principal but `role`. */
function onlyRole(sid: string, actions: string[], role: IRole, resources: string[]): PolicyStatement {
  return new PolicyStatement({
    sid,
    effect: Effect.DENY,
    principals: [new AnyPrincipal()],
    actions,
    resources,
    conditions: { ArnNotEquals: { 'aws:PrincipalArn': role.roleArn } },
  });
}
