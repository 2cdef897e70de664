import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
export const sha256 = (data: string | Buffer): Buffer => createHash('sha256').update(data).digest();

/** AES-256-GCM; output is base64url(iv ‖ tag ‖ ciphertext). */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

export function decryptSecret(key: Buffer, sealed: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export interface SealedSecretsCheck {
  count: number;
  /** Secrets that open with the current LOOPTRACE_SECRET_KEY (authenticated decryption succeeds). */
  opens_with_current_key: number;
}

/** Proves secrets are sealed with the key in use, without letting a plaintext out of this function. */
export function checkSealedSecrets(key: Buffer, sealed: readonly string[]): SealedSecretsCheck {
  let opens = 0;
  for (const value of sealed) {
    try {
      decryptSecret(key, value);
      opens += 1;
    } catch {
      // Not sealed with this key (rotated without re-sealing) or not a sealed value at all.
    }
  }
  return { count: sealed.length, opens_with_current_key: opens };
}
