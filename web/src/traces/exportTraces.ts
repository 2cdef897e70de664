import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import type { TraceFilters } from './filters';
import { saveFile } from '../ui/ExportButtons';

type ExportFormat = NonNullable<NonNullable<paths['/v1/traces/export']['get']['parameters']['query']>['format']>;

/** GET /v1/traces/export of these filters, saved as a file. */
export async function exportTraces(filters: TraceFilters, format: ExportFormat): Promise<void> {
  saveFile(await unwrap(api.GET('/v1/traces/export', { params: { query: { ...filters, format } }, parseAs: 'blob' })), `traces.${format}`);
}
