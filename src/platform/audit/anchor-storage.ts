import { randomUUID } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';

export const ANCHOR_KEY_PREFIX = 'audit-anchors/';

/** Object key of a day's manifest; the signature lives beside it under the same key + `.sig`. */
export const anchorObjectKey = (tenantId: string, date: string): string => `${ANCHOR_KEY_PREFIX}${tenantId}/${date}.json`;

/**
 * Write-once object storage for signed anchors. `writeOnce` never replaces an object: it answers
 * 'exists' instead, and the caller decides whether what is there is what it meant to write.
 */
export interface AnchorStorage {
  readonly kind: string;
  writeOnce(key: string, bytes: Buffer): Promise<'created' | 'exists'>;
  read(key: string): Promise<Buffer | null>;
}

// Keys are built from a uuid and a validated date; refuse anything else before it reaches a path.
const SAFE_KEY = /^audit-anchors\/[0-9a-f-]{36}\/\d{4}-\d{2}-\d{2}\.json(\.sig)?$/;

/**
 * Local directory: `<dir>/<tenant_id>/<date>.json` and `.json.sig`. Each file is written and
 * fsynced under a temporary name, made read-only (0444), then hard-linked into place: link(2)
 * fails when the name exists, so a file appears whole or not at all and is never overwritten.
 * Read-only modes do not stop root; off-host immutability is what S3 Object Lock is for.
 */
export class LocalAnchorStorage implements AnchorStorage {
  readonly kind = 'local';

  constructor(readonly dir: string) {}

  pathOf(key: string): string {
    if (!SAFE_KEY.test(key)) throw new Error(`refusing anchor key ${JSON.stringify(key)}`);
    return path.join(this.dir, key.slice(ANCHOR_KEY_PREFIX.length));
  }

  async writeOnce(key: string, bytes: Buffer): Promise<'created' | 'exists'> {
    const target = this.pathOf(key);
    const folder = path.dirname(target);
    await mkdir(folder, { recursive: true });
    const temporary = `${target}.${randomUUID()}.tmp`;
    const handle = await open(temporary, 'wx', 0o444);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await chmod(temporary, 0o444);
      await link(temporary, target);
      await syncDirectory(folder);
      return 'created';
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
      throw err;
    } finally {
      await unlink(temporary).catch(() => {});
    }
  }

  async read(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
}

/** Makes the new directory entry itself durable, not only the file's bytes. */
async function syncDirectory(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
