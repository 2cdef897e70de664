import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import type { TraceFilters } from './filters';

export type ExportFormat = NonNullable<NonNullable<paths['/v1/traces/export']['get']['parameters']['query']>['format']>;

/**
 * GET /v1/traces/export of these filters, saved as a file. The request needs the session token, so
 * it is fetched (not a plain link) and handed to the browser as a download.
 */
export async function exportTraces(filters: TraceFilters, format: ExportFormat): Promise<void> {
  const file = await unwrap(api.GET('/v1/traces/export', { params: { query: { ...filters, format } }, parseAs: 'blob' }));
  const url = URL.createObjectURL(file);
  const link = document.createElement('a');
  link.href = url;
  link.download = `traces.${format}`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
