import type { ClickHouseClient } from '@clickhouse/client';
import type { Session } from 'chdb';

export type StreamFormat = 'CSV' | 'CSVWithNames' | 'JSONEachRow' | 'Parquet';

/**
 * Part of a query result as the engine formatted it, with the number of records it holds. With
 * Parquet every chunk is a complete file of its own (chDB formats each block as one; over HTTP
 * the query's whole answer is one): parquet-concat.ts joins them.
 */
export interface ResultChunk {
  data: Buffer;
  rows: number;
}

/**
 * Query results as a stream of formatted bytes, pulled chunk by chunk, so a large result never sits
 * in memory whole. The @clickhouse/client adapter of chDB materialises every result before handing
 * it over; chDB's own streaming sessions do not, and the HTTP client streams by nature.
 */
export type TextFormat = 'JSONCompact' | 'TabSeparatedRaw';

export interface ResultStreamer {
  stream(query: string, params: Record<string, unknown>, format: StreamFormat): AsyncIterable<ResultChunk>;
  /** A bounded answer whole, on a connection of its own (see embeddedStreamer). */
  text(query: string, format: TextFormat): Promise<string>;
  close(): Promise<void>;
}

/**
 * chDB allows one active stream per session, and any number of sessions on the engine's path in
 * this process: sessions are pooled, one per concurrent stream.
 */
export function embeddedStreamer(chPath: string, database: string): ResultStreamer {
  const idle: Session[] = [];
  let closed = false;
  const acquire = async (): Promise<Session> => {
    const reused = idle.pop();
    if (reused) return reused;
    const { Session } = await import('chdb');
    const session = new Session(chPath);
    await session.queryAsync(`USE ${database}`); // database is an identifier checked by config
    return session;
  };
  const release = (session: Session) => {
    if (closed) session.close();
    else idle.push(session);
  };
  return {
    async *stream(query, params, format) {
      const session = await acquire();
      try {
        let chunks = 0;
        for await (const chunk of session.queryStreamBind(query, params, { format })) {
          const data = Buffer.from(chunk.raw());
          // chDB writes CSVWithNames' header line at the top of every chunk: the first one is the file's.
          yield { data: format === 'CSVWithNames' && chunks > 0 ? withoutHeaderLine(data) : data, rows: chunk.numRows };
          chunks += 1;
        }
      } finally {
        release(session);
      }
    },
    /**
     * On a session of the pool, never the shared client's: after a query fails part-way, chDB hands
     * the output it had formatted to the next query of the same session (seen with 3.4.0:
     * a timed-out JSONCompact answer arrived in front of the next JSONEachRow). A session whose
     * query failed is closed, never reused, so no one else's query can receive that output.
     */
    async text(query, format) {
      const session = await acquire();
      let result;
      try {
        result = await session.queryAsync(query, { format });
      } catch (err) {
        session.close();
        throw err;
      }
      release(session);
      return result.text();
    },
    async close() {
      closed = true;
      for (const session of idle.splice(0)) session.close();
    },
  };
}

/** Over HTTP the client streams; records are counted from its lines (a CSV record may span lines). */
export function serverStreamer(client: ClickHouseClient): ResultStreamer {
  return {
    async *stream(query, params, format) {
      if (format === 'Parquet') {
        // One file for the whole query: its footer comes last, so it is only usable once complete.
        // Callers keep a query's answer bounded (the export's pages).
        const { stream } = await client.exec({ query: `${query}\nFORMAT Parquet`, query_params: params });
        const parts: Buffer[] = [];
        for await (const part of stream as AsyncIterable<Buffer>) parts.push(part);
        yield { data: Buffer.concat(parts), rows: 0 }; // rows: the footer says, parquet-concat.ts reads it
        return;
      }
      const result = await client.query({ query, query_params: params, format });
      const countRecord = format === 'JSONEachRow' ? () => 1 : csvRecordCounter();
      for await (const rows of result.stream()) {
        let text = '';
        let records = 0;
        for (const row of rows) {
          text += `${row.text}\n`;
          records += countRecord(row.text);
        }
        yield { data: Buffer.from(text), rows: records };
      }
    },
    async text(query, format) {
      const result = await client.query({ query, format });
      return result.text();
    },
    async close() {},
  };
}

/** `data` after its first CSV record (the header line; a quoted name may hold a newline). */
function withoutHeaderLine(data: Buffer): Buffer {
  let insideQuotes = false;
  for (let i = 0; i < data.length; i += 1) {
    if (data[i] === 0x22) insideQuotes = !insideQuotes;
    else if (data[i] === 0x0a && !insideQuotes) return data.subarray(i + 1);
  }
  return Buffer.alloc(0);
}

/**
 * The client splits a result at every newline; a CSV record may hold quoted newlines. A record
 * ends at a newline outside quotes, and quotes inside a field are doubled, so parity decides.
 */
function csvRecordCounter(): (lineText: string) => number {
  let insideQuotes = false;
  return (text) => {
    for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) insideQuotes = !insideQuotes;
    return insideQuotes ? 0 : 1;
  };
}
