import { z } from 'zod';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { PLANS, type PlanName } from '../../platform/plans.js';
import type { TraceService } from '../traces/service.js';
import type { DatasetExport, DatasetExports } from './export.js';
import type { DatasetItemRow, DatasetRepository, DatasetRow } from './repo.js';
import type { CreateDataset, Dataset, DatasetExportFormat, DatasetItem, DatasetItemInput, ItemLabel, LabelFilter } from './schemas.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { DatasetRunService } from './run-service.js';

const idCursor = z.object({ id: z.guid() });

export function toDataset(row: DatasetRow): Dataset {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    description: row.description,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function toItem(row: DatasetItemRow): DatasetItem {
  return {
    id: row.id,
    dataset_id: row.dataset_id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    project_id: row.project_id,
    label: row.label,
    expected: row.expected,
    created_at: row.created_at.toISOString(),
  };
}

export class DatasetService {
  constructor(
    private readonly repo: DatasetRepository,
    private readonly exports: DatasetExports,
    private readonly traces: Pick<TraceService, 'projectsByTrace'>,
  ) {}

  async create(tenantId: string, body: CreateDataset): Promise<Dataset> {
    return toDataset(await this.repo.insert(tenantId, newId(), body.name, body.description));
  }

  async get(tenantId: string, id: string): Promise<Dataset> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('dataset');
    return toDataset(row);
  }

  /** Oldest first (keyset on the time-ordered id). */
  async list(tenantId: string, limit: number, cursor: string | undefined) {
    const after = cursor ? decodeCursor(cursor, idCursor).id : null;
    const page = toPage(await this.repo.list(tenantId, after, limit + 1), limit, (last) => ({ id: last.id }));
    return { datasets: page.items.map(toDataset), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async itemCount(tenantId: string, id: string): Promise<number> {
    const count = await this.repo.itemCount(tenantId, id);
    if (count === undefined) throw notFound('dataset');
    return count;
  }

  async delete(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.delete(tenantId, id))) throw notFound('dataset');
  }

  /**
   * Every trace must be the tenant's (the trace registry says so, and which project it is in);
   * one that is not is a 404 naming it, and nothing is added. A span id is not checked here: a
   * run reports a span it cannot find as that item's error.
   */
  async addItems(tenantId: string, datasetId: string, items: readonly DatasetItemInput[]): Promise<DatasetItem[]> {
    await this.get(tenantId, datasetId);
    const traceIds = [...new Set(items.map((item) => item.trace_id))];
    const projectOf = await this.traces.projectsByTrace(tenantId, traceIds);
    const missing = traceIds.filter((id) => !projectOf.has(id));
    if (missing.length > 0) {
      throw new AppError(404, 'not_found', `trace ${missing[0]} not found${missing.length > 1 ? ` (and ${missing.length - 1} more)` : ''}`, {
        missing_trace_ids: missing,
      });
    }
    const rows = await this.repo.insertItems(
      tenantId,
      datasetId,
      items.map((item) => ({
        id: newId(),
        trace_id: item.trace_id,
        span_id: item.span_id ?? null,
        project_id: projectOf.get(item.trace_id)!,
        label: item.label ?? null,
        expected: item.expected ?? null,
      })),
    );
    if (!rows) throw notFound('dataset');
    return rows.map(toItem);
  }

  /** In id order (the order they were added). */
  async listItems(tenantId: string, datasetId: string, label: LabelFilter, limit: number, cursor: string | undefined) {
    const after = cursor ? decodeCursor(cursor, idCursor).id : null;
    await this.get(tenantId, datasetId);
    const rows = await this.repo.listItems(tenantId, datasetId, label, after, limit + 1);
    const page = toPage(rows, limit, (last) => ({ id: last.id }));
    return { items: page.items.map(toItem), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async setItemLabel(tenantId: string, datasetId: string, itemId: string, label: ItemLabel | null): Promise<DatasetItem> {
    const row = await this.repo.setItemLabel(tenantId, datasetId, itemId, label);
    if (!row) throw notFound('dataset item');
    return toItem(row);
  }

  async deleteItem(tenantId: string, datasetId: string, itemId: string): Promise<void> {
    if (!(await this.repo.deleteItem(tenantId, datasetId, itemId))) throw notFound('dataset item');
  }

  /** Data-subject requests (src/modules/privacy): the items taken from these traces, in every dataset. */
  async itemsForTraces(tenantId: string, traceIds: readonly string[]): Promise<DatasetItem[]> {
    if (traceIds.length === 0) return [];
    return (await this.repo.itemsOfTraces(tenantId, traceIds)).map(toItem);
  }

  async countItemsForTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.countItemsOfTraces(tenantId, traceIds);
  }

  /** Data-subject erasure: the items taken from these traces (their labels and expected outputs). Idempotent. */
  async eraseTraces(tenantId: string, traceIds: readonly string[]): Promise<number> {
    return traceIds.length === 0 ? 0 : this.repo.eraseItemsOfTraces(tenantId, traceIds);
  }

  /** The items in id order, at most the plan's export rows (docs/api-decisions.md, Datasets). */
  async export(tenantId: string, plan: PlanName, datasetId: string, format: DatasetExportFormat, label: LabelFilter): Promise<DatasetExport> {
    await this.get(tenantId, datasetId);
    return this.exports.open({ tenantId, datasetId, format, label, maxRows: PLANS[plan].datasetExportRows });
  }
}
