/**
 * Anchors signed on AWS: the KMS asymmetric key (ECC_NIST_P256, SIGN_VERIFY) that only the anchor
 * Lambda's role may use for kms:Sign. KMS returns DER-encoded ECDSA signatures, which
 * anchor-digest.ts verifies with the key's public half (kms:GetPublicKey, or a copy of it).
 */
import { type KMSClient, SignCommand } from '@aws-sdk/client-kms';
import type { AnchorSigner } from './anchor-digest.ts';

export function kmsAnchorSigner(kms: KMSClient, keyArn: string): AnchorSigner {
  return {
    keyId: keyArn,
    algorithm: 'ecdsa-p256-sha256',
    async sign(message) {
      const out = await kms.send(
        new SignCommand({
          KeyId: keyArn,
          Message: message,
          MessageType: 'RAW',
          SigningAlgorithm: 'ECDSA_SHA_256',
        }),
      );
      if (!out.Signature) throw new Error(`KMS returned no signature for key ${keyArn}`);
      return Buffer.from(out.Signature);
    },
  };
}
