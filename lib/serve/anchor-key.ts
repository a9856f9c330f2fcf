/**
 * The local anchor key: an Ed25519 key pair kept outside every store (`$PLANGATE_ANCHOR_KEY_DIR`,
 * else `$XDG_CONFIG_HOME/plangate`, else `~/.config/plangate`), created on first use, the private
 * half mode 0600. Whoever can write the store (its events table, its digest log) cannot sign an
 * anchor, so a rewritten chain cannot be re-anchored; an auditor needs only the public half.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { AnchorSigner } from '../runtime/journal/anchor-digest.ts';

export const ANCHOR_KEY_DIR_ENV = 'PLANGATE_ANCHOR_KEY_DIR';
const PRIVATE_FILE = 'anchor-key';
export const PUBLIC_KEY_FILE = 'anchor-key.pub';

/** The directory holding the anchor key. */
export function anchorKeyDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const named = env[ANCHOR_KEY_DIR_ENV];
  if (named) return resolve(named);
  return join(env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(homedir(), '.config'), 'plangate');
}

/** A key directory inside the store would be readable and writable by whoever rewrites the store. */
export class AnchorKeyPlacementError extends Error {
  override readonly name = 'AnchorKeyPlacementError';
}

/** The key id of a public key: `ed25519:` and the SHA-256 of its SPKI DER, hex. */
export function ed25519KeyId(publicKeyPem: string): string {
  const der = createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' });
  return `ed25519:${createHash('sha256').update(der).digest('hex')}`;
}

export interface LocalAnchorKey {
  readonly signer: AnchorSigner;
  readonly publicKeyPem: string;
  readonly dir: string;
}

/** Loads the anchor key from `dir`, creating it on first use; refuses a directory inside `storeRoot`. */
export async function loadAnchorKey(dir: string, storeRoot: string): Promise<LocalAnchorKey> {
  const inside = relative(resolve(storeRoot), resolve(dir));
  if (!inside.startsWith('..') && !inside.startsWith('/')) {
    throw new AnchorKeyPlacementError(
      `the anchor key directory ${dir} is inside the store ${storeRoot}: set ${ANCHOR_KEY_DIR_ENV} to a directory outside it`,
    );
  }
  let privatePem: string;
  try {
    privatePem = await readFile(join(dir, PRIVATE_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const pair = generateKeyPairSync('ed25519');
    privatePem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // `wx`: two processes creating the key at once keep the first one's.
    await writeFile(join(dir, PRIVATE_FILE), privatePem, { mode: 0o600, flag: 'wx' }).catch(
      async (writeError: NodeJS.ErrnoException) => {
        if (writeError.code !== 'EEXIST') throw writeError;
        privatePem = await readFile(join(dir, PRIVATE_FILE), 'utf8');
      },
    );
  }
  const privateKey = createPrivateKey(privatePem);
  const publicKeyPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  await writeFile(join(dir, PUBLIC_KEY_FILE), publicKeyPem, { mode: 0o644 });
  return {
    dir,
    publicKeyPem,
    signer: {
      keyId: ed25519KeyId(publicKeyPem),
      algorithm: 'ed25519',
      sign: async (message) => sign(null, message, privateKey),
    },
  };
}

/** The public half kept in `dir`, when there is one (what `plangate audit verify` trusts by default). */
export async function readAnchorPublicKey(dir: string): Promise<string | undefined> {
  return readFile(join(dir, PUBLIC_KEY_FILE), 'utf8').catch(() => undefined);
}
