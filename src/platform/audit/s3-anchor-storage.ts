// Types only: the SDK itself is loaded on first use, so processes that anchor locally never pay for it.
import type { PutObjectCommandInput, S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { AnchorStorage } from './anchor-storage.js';

export interface S3AnchorSettings {
  bucket: string;
  region: string | undefined;
  endpoint: string | undefined;
  retentionDays: number;
}

/**
 * The PutObject request of one anchor object: COMPLIANCE-mode Object Lock (nobody, root account
 * included, can delete or overwrite it before the retention date), `If-None-Match: *` so an
 * existing object is never replaced, and a SHA-256 checksum (S3 requires an integrity checksum
 * on Object Lock writes). The bucket must have been created with Object Lock enabled.
 */
export function anchorPutInput(settings: S3AnchorSettings, key: string, bytes: Buffer, now: Date = new Date()): PutObjectCommandInput {
  return {
    Bucket: settings.bucket,
    Key: key,
    Body: bytes,
    ContentType: key.endsWith('.sig') ? 'application/octet-stream' : 'application/json',
    IfNoneMatch: '*',
    ChecksumAlgorithm: 'SHA256',
    ObjectLockMode: 'COMPLIANCE',
    ObjectLockRetainUntilDate: new Date(now.getTime() + settings.retentionDays * 86_400_000),
  };
}

interface S3Failure {
  name?: string;
  $metadata?: { httpStatusCode?: number };
}

const statusOf = (err: unknown): number | undefined => (err as S3Failure).$metadata?.httpStatusCode;

/**
 * Anchor storage on S3 (or an S3-compatible store with Object Lock, via AUDIT_ANCHOR_S3_ENDPOINT).
 * Credentials come from the SDK's default chain (environment, profile, instance role); none are
 * read or logged here. Exercised in tests only against a local stand-in, not against real S3.
 */
export class S3AnchorStorage implements AnchorStorage {
  readonly kind = 's3';
  private opened: Promise<{ sdk: typeof import('@aws-sdk/client-s3'); client: S3Client }> | undefined;

  constructor(
    private readonly settings: S3AnchorSettings,
    /** Extra client settings (tests pass static credentials for a local stand-in). */
    private readonly clientConfig: S3ClientConfig = {},
  ) {}

  private open() {
    this.opened ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        region: this.settings.region,
        endpoint: this.settings.endpoint,
        // S3-compatible stores behind a custom endpoint rarely serve virtual-hosted bucket names.
        forcePathStyle: this.settings.endpoint !== undefined,
        ...this.clientConfig,
      }),
    }));
    return this.opened;
  }

  async writeOnce(key: string, bytes: Buffer): Promise<'created' | 'exists'> {
    const { sdk, client } = await this.open();
    try {
      await client.send(new sdk.PutObjectCommand(anchorPutInput(this.settings, key, bytes)));
      return 'created';
    } catch (err) {
      // 412: the object exists. 409: a concurrent conditional write to the same key is in flight.
      const status = statusOf(err);
      if (status === 412 || status === 409) return 'exists';
      throw err;
    }
  }

  async read(key: string): Promise<Buffer | null> {
    const { sdk, client } = await this.open();
    try {
      const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.settings.bucket, Key: key }));
      return object.Body ? Buffer.from(await object.Body.transformToByteArray()) : Buffer.alloc(0);
    } catch (err) {
      if (statusOf(err) === 404 || (err as S3Failure).name === 'NoSuchKey') return null;
      throw err;
    }
  }
}
