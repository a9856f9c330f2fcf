/**
 * A signed anchor of an execution's hash chain: {executionId, seq, head, time}, signed with a key
 * the journal's table does not hold (locally an Ed25519 key outside the store, on AWS a KMS
 * asymmetric key only the anchor writer may use). An auditor with the public key alone can tell
 * whether the stored chain still reaches the anchored head at the anchored seq.
 */
import { createPublicKey, verify } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../../plan/digest.ts';

/** The signature schemes an anchor may carry: Ed25519 (local key), ECDSA P-256 with SHA-256 (KMS ECC_NIST_P256). */
export const ANCHOR_ALGORITHMS = ['ed25519', 'ecdsa-p256-sha256'] as const;
export type AnchorAlgorithm = (typeof ANCHOR_ALGORITHMS)[number];

const HASH = /^sha256:[0-9a-f]{64}$/;

/** What is signed: the chain's head at one sequence number, and who signed it with what. */
export const AnchorClaimSchema = z.object({
  v: z.literal(1),
  executionId: z.string().min(1),
  seq: z.number().int().min(1),
  head: z.string().regex(HASH, 'a sha256:<64 hex> hash'),
  time: z.iso.datetime(),
  /** The signing key: `ed25519:<sha256 of its public key>` locally, the KMS key ARN on AWS. */
  keyId: z.string().min(1),
  algorithm: z.enum(ANCHOR_ALGORITHMS),
});
export type AnchorClaim = z.infer<typeof AnchorClaimSchema>;

/** A claim and its signature (base64; DER for ECDSA, as KMS returns it). */
export const AnchorDigestSchema = AnchorClaimSchema.extend({ signature: z.string().min(1) });
export type AnchorDigest = z.infer<typeof AnchorDigestSchema>;

/** Signs anchor claims: the local Ed25519 key, or KMS. */
export interface AnchorSigner {
  readonly keyId: string;
  readonly algorithm: AnchorAlgorithm;
  sign(message: Buffer): Promise<Buffer>;
}

/** The bytes a claim's signature covers: its canonical JSON. */
export function claimBytes(claim: AnchorClaim): Buffer {
  const { v, executionId, seq, head, time, keyId, algorithm } = claim;
  return Buffer.from(canonicalJson({ v, executionId, seq, head, time, keyId, algorithm }), 'utf8');
}

/** The head of one execution's chain to anchor. */
export interface ChainHeadRef {
  readonly executionId: string;
  readonly seq: number;
  readonly hash: string;
}

export async function signAnchor(
  signer: AnchorSigner,
  head: ChainHeadRef,
  time: Date,
): Promise<AnchorDigest> {
  const claim: AnchorClaim = {
    v: 1,
    executionId: head.executionId,
    seq: head.seq,
    head: head.hash,
    time: time.toISOString(),
    keyId: signer.keyId,
    algorithm: signer.algorithm,
  };
  const signature = await signer.sign(claimBytes(claim));
  return { ...claim, signature: signature.toString('base64') };
}

/** Whether the digest's signature verifies with `publicKeyPem` (SPKI PEM) under its algorithm. */
export function anchorSignatureValid(digest: AnchorDigest, publicKeyPem: string): boolean {
  try {
    const key = createPublicKey(publicKeyPem);
    const expected = digest.algorithm === 'ed25519' ? 'ed25519' : 'ec';
    if (key.asymmetricKeyType !== expected) return false;
    return verify(
      digest.algorithm === 'ed25519' ? null : 'sha256',
      claimBytes(digest),
      digest.algorithm === 'ed25519' ? key : { key, dsaEncoding: 'der' },
      Buffer.from(digest.signature, 'base64'),
    );
  } catch {
    return false;
  }
}
