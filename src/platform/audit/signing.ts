import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import type { Sql } from '../../stores/pg.js';
import { decryptSecret, encryptSecret, sha256Hex } from '../crypto.js';

export const AUDIT_ANCHOR_KEY_PURPOSE = 'audit-anchor';

export interface SigningKey {
  keyId: string;
  publicKeyPem: string;
  sign(data: Buffer): Buffer;
  verify(data: Buffer, signature: Buffer): boolean;
}

interface SigningKeyRow {
  key_id: string;
  private_key_enc: string;
  public_key_pem: string;
}

/** First 16 hex digits of SHA-256 over the public key's SPKI DER: short, stable, derivable by anyone. */
export function keyIdOf(publicKey: KeyObject): string {
  return sha256Hex(publicKey.export({ type: 'spki', format: 'der' })).slice(0, 16);
}

/** Ed25519 verification with a PEM public key; false (never a throw) on any malformed input. */
export function verifyEd25519(publicKeyPem: string, data: Buffer, signature: Buffer): boolean {
  try {
    return verify(null, data, createPublicKey(publicKeyPem), signature);
  } catch {
    return false;
  }
}

/**
 * The service-wide Ed25519 key of one purpose, kept in Postgres so every replica signs with the
 * same key. The private half is sealed with LOOPTRACE_SECRET_KEY (AES-256-GCM); it never leaves
 * this object.
 */
export class SigningKeyStore {
  private loaded: Promise<SigningKey> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly secretKey: Buffer,
    private readonly purpose: string = AUDIT_ANCHOR_KEY_PURPOSE,
  ) {}

  get(): Promise<SigningKey> {
    // A failed load (database down) must not be cached forever.
    this.loaded ??= this.loadOrCreate().catch((err: unknown) => {
      this.loaded = undefined;
      throw err;
    });
    return this.loaded;
  }

  private async loadOrCreate(): Promise<SigningKey> {
    const existing = await this.find();
    if (existing) return this.open(existing);
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    // Replicas starting together may all generate a key; the first insert wins and all adopt it.
    await this.sql`
      insert into signing_keys (purpose, key_id, private_key_enc, public_key_pem)
      values (${this.purpose}, ${keyIdOf(publicKey)}, ${encryptSecret(this.secretKey, privatePem)},
              ${publicKey.export({ type: 'spki', format: 'pem' }) as string})
      on conflict (purpose) do nothing`;
    const winner = await this.find();
    if (!winner) throw new Error(`signing key ${this.purpose} vanished right after creation`);
    return this.open(winner);
  }

  private async find(): Promise<SigningKeyRow | undefined> {
    const [row] = await this.sql<SigningKeyRow[]>`
      select key_id, private_key_enc, public_key_pem from signing_keys where purpose = ${this.purpose}`;
    return row;
  }

  private open(row: SigningKeyRow): SigningKey {
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey(decryptSecret(this.secretKey, row.private_key_enc));
    } catch {
      throw new Error(`signing key ${this.purpose} cannot be decrypted: LOOPTRACE_SECRET_KEY differs from the one that sealed it`);
    }
    const publicKey = createPublicKey(row.public_key_pem);
    // A published key that does not match the private half would make every signature unverifiable.
    if (keyIdOf(createPublicKey(privateKey)) !== keyIdOf(publicKey) || keyIdOf(publicKey) !== row.key_id) {
      throw new Error(`signing key ${this.purpose} is inconsistent: stored public key or key_id does not match the private key`);
    }
    const publicKeyPem = row.public_key_pem;
    return {
      keyId: row.key_id,
      publicKeyPem,
      sign: (data) => sign(null, data, privateKey),
      verify: (data, signature) => verifyEd25519(publicKeyPem, data, signature),
    };
  }
}
