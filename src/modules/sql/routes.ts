import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { QUERY_READ, requireAuth, type AccessPolicy } from '../../platform/access.js';
import { EXPORT_CONTENT_TYPES } from '../traces/service.js';
import { SQL_LIMITS, SQL_MAX_CONCURRENT, SQL_MAX_FILE_ROWS, SQL_MAX_JSON_ROWS } from './service.js';
import { SQL_TABLES } from './guard.js';
import { sqlBody, sqlResult, type SqlResult } from './schemas.js';

// A query does not fit a URL: a POST that changes nothing, readable with query-scoped keys, Pro and
// above, and audited (who read what with SQL is worth a record, unlike the API's own reads).
const SQL_READ: AccessPolicy = { ...QUERY_READ, plan: 'pro', readOnly: true, audit: 'sql.query' };

const AUDITED_QUERY_CHARS = 2_000;

export const sqlRoutes: FastifyPluginAsyncZod = async (app) => {
  const sql = app.services.sql;

  app.post('/v1/sql', {
    config: {
      access: SQL_READ,
      errors: ['sql.refused', 'sql.invalid_query', 'sql.query_too_long', 'sql.limit_exceeded', 'sql.too_many_queries'],
      responseDeadline: false,
    },
    schema: {
      tags: ['sql'],
      summary: "Run one read-only SELECT over the tenant's traces, spans and metrics",
      description:
        `ClickHouse SQL over the tables ${SQL_TABLES.join(', ')}: the caller's tenant only, with the API's column names (docs/sql.md). ` +
        "Refused with 400 sql.refused and a reason: anything but one SELECT, table functions, other databases and system tables, SETTINGS, FORMAT and INTO OUTFILE, " +
        'functions that read outside the tables (dictGet, joinGet, getSetting, …). 400 sql.invalid_query: what the engine found wrong (syntax, unknown column, types). ' +
        `Bounded: ${SQL_LIMITS.maxExecutionSeconds} s, ${SQL_LIMITS.maxRowsToRead.toLocaleString('en')} rows read, ${SQL_LIMITS.maxResultBytes / 2 ** 20} MiB of result (else 400 sql.limit_exceeded), ` +
        `${SQL_MAX_CONCURRENT} queries of a tenant at once (else 429 sql.too_many_queries with Retry-After), the query rate limit. ` +
        `JSON answers at most ${SQL_MAX_JSON_ROWS.toLocaleString('en')} rows (truncated: true when cut); csv and parquet are streamed, at most ${SQL_MAX_FILE_ROWS.toLocaleString('en')} rows. ` +
        'Every query is recorded in the audit log (action sql.query).',
      body: sqlBody,
      response: { 200: sqlResult },
    },
    handler: async (request, reply) => {
      const { query, format } = request.body;
      const answer = await sql.run(requireAuth(request).tenantId, request.body);
      request.auditResource = {
        type: 'sql',
        id: null,
        details: { query: query.slice(0, AUDITED_QUERY_CHARS), query_chars: query.length, format, ...(answer.kind === 'json' ? { rows: answer.rows, truncated: answer.result.truncated } : {}) },
      };
      if (answer.kind === 'json') return answer.result;
      // A file: the schema above documents the JSON answer; this payload is the stream as it is.
      return reply
        .type(EXPORT_CONTENT_TYPES[format as 'csv' | 'parquet'])
        .header('content-disposition', `attachment; filename="query.${format}"`)
        .send(answer.body as unknown as SqlResult);
    },
  });
};
