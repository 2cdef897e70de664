import type { TxSql } from '../../stores/pg.js';
import type { DlqRepository, NewDeadLetter } from './repo.js';

export type { NewDeadLetter } from './repo.js';

/**
 * Writes to the dead-letter table for the modules whose work ends up there (webhooks): a final
 * failure is recorded, and removed with what it copies, inside the caller's transaction. The dlq
 * module owns the table; DlqService lists, retries and discards its entries.
 */
export class DeadLetterWriter {
  constructor(private readonly repo: Pick<DlqRepository, 'record' | 'removeFor'>) {}

  record(tx: TxSql, deadLetter: NewDeadLetter): Promise<void> {
    return this.repo.record(tx, deadLetter);
  }

  removeFor(tx: TxSql, tenantId: string, kind: string, refIds: readonly string[]): Promise<void> {
    return this.repo.removeFor(tx, tenantId, kind, refIds);
  }
}
