import type { Sql, TxSql } from '../../stores/pg.js';
import type { ItemLabel, LabelFilter } from './schemas.js';

export interface DatasetRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  created_at: Date;
  updated_at: Date;
}

export interface DatasetItemRow {
  id: string;
  tenant_id: string;
  dataset_id: string;
  trace_id: string;
  span_id: string | null;
  project_id: string;
  label: ItemLabel | null;
  expected: string | null;
  created_at: Date;
}

export type NewItemRow = Pick<DatasetItemRow, 'id' | 'trace_id' | 'span_id' | 'project_id' | 'label' | 'expected'>;

/** The SQL condition of a label filter on dataset_items. */
export function labelCondition(db: Sql | TxSql, label: LabelFilter) {
  if (label === 'all') return db``;
  return label === 'unlabeled' ? db`and label is null` : db`and label = ${label}`;
}

export function datasetRepository(sql: Sql) {
  return {
    async insert(tenantId: string, id: string, name: string, description: string): Promise<DatasetRow> {
      const [row] = await sql<DatasetRow[]>`
        insert into datasets (id, tenant_id, name, description) values (${id}, ${tenantId}, ${name}, ${description}) returning *`;
      return row!;
    },

    async find(tenantId: string, id: string): Promise<DatasetRow | undefined> {
      const [row] = await sql<DatasetRow[]>`select * from datasets where tenant_id = ${tenantId} and id = ${id}`;
      return row;
    },

    async list(tenantId: string, afterId: string | null, limit: number): Promise<DatasetRow[]> {
      return sql<DatasetRow[]>`
        select * from datasets
        where tenant_id = ${tenantId} ${afterId ? sql`and id > ${afterId}` : sql``}
        order by id limit ${limit}`;
    },

    /** Undefined when there is no such dataset. */
    async itemCount(tenantId: string, id: string): Promise<number | undefined> {
      const [row] = await sql<{ n: number }[]>`
        select (select count(*) from dataset_items i where i.tenant_id = d.tenant_id and i.dataset_id = d.id)::int as n
        from datasets d where d.tenant_id = ${tenantId} and d.id = ${id}`;
      return row?.n;
    },

    /** Items, runs and results go with it (foreign keys on delete cascade). */
    async delete(tenantId: string, id: string): Promise<boolean> {
      const rows = await sql`delete from datasets where tenant_id = ${tenantId} and id = ${id} returning id`;
      return rows.length > 0;
    },

    /**
     * All or nothing; undefined when the dataset is gone. The dataset row stays locked until the
     * items are in, so a concurrent delete waits rather than failing their foreign key. Rows come
     * back in the order given.
     */
    async insertItems(tenantId: string, datasetId: string, items: readonly NewItemRow[]): Promise<DatasetItemRow[] | undefined> {
      return sql.begin(async (tx) => {
        const [found] = await tx`update datasets set updated_at = now() where tenant_id = ${tenantId} and id = ${datasetId} returning id`;
        if (!found) return undefined;
        const inserted = await tx<DatasetItemRow[]>`
          insert into dataset_items (id, tenant_id, dataset_id, trace_id, span_id, project_id, label, expected)
          select id, ${tenantId}, ${datasetId}, trace_id, span_id, project_id, label, expected
          from jsonb_to_recordset(${tx.json([...items])})
            as t(id uuid, trace_id uuid, span_id uuid, project_id uuid, label text, expected text)
          returning *`;
        const byId = new Map(inserted.map((row) => [row.id, row]));
        return items.map((item) => byId.get(item.id)!);
      });
    },

    async listItems(tenantId: string, datasetId: string, label: LabelFilter, afterId: string | null, limit: number): Promise<DatasetItemRow[]> {
      return sql<DatasetItemRow[]>`
        select * from dataset_items
        where tenant_id = ${tenantId} and dataset_id = ${datasetId}
          ${afterId ? sql`and id > ${afterId}` : sql``}
          ${labelCondition(sql, label)}
        order by id limit ${limit}`;
    },

    async setItemLabel(tenantId: string, datasetId: string, itemId: string, label: ItemLabel | null): Promise<DatasetItemRow | undefined> {
      const [row] = await sql<DatasetItemRow[]>`
        update dataset_items set label = ${label}
        where tenant_id = ${tenantId} and dataset_id = ${datasetId} and id = ${itemId}
        returning *`;
      return row;
    },

    async deleteItem(tenantId: string, datasetId: string, itemId: string): Promise<boolean> {
      const rows = await sql`
        delete from dataset_items where tenant_id = ${tenantId} and dataset_id = ${datasetId} and id = ${itemId} returning id`;
      return rows.length > 0;
    },

    /** Data-subject requests: the items taken from these traces, in every dataset, in id order. */
    async itemsOfTraces(tenantId: string, traceIds: readonly string[]): Promise<DatasetItemRow[]> {
      return sql<DatasetItemRow[]>`
        select * from dataset_items where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) order by id`;
    },

    async countItemsOfTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from dataset_items where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[])`;
      return row!.n;
    },

    async eraseItemsOfTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
      const rows = await sql`
        delete from dataset_items where tenant_id = ${tenantId} and trace_id = any(${traceIds as string[]}::uuid[]) returning id`;
      return rows.length;
    },
  };
}

export type DatasetRepository = ReturnType<typeof datasetRepository>;
