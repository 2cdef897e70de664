import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from '@clickhouse/client';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { PARQUET_SETTINGS } from '../../src/stores/clickhouse-parquet.js';
import { embeddedStreamer, serverStreamer } from '../../src/stores/clickhouse-stream.js';
import { ParquetConcat } from '../../src/stores/parquet-concat.js';

/**
 * Joining complete Parquet files into one (the exports' pages, and chDB's one file per block):
 * the result is read back by an independent reader (hyparquet) and by ClickHouse itself.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'parquet-concat-'));
const streamer = embeddedStreamer(path.join(dir, 'ch'), 'default');
afterAll(async () => {
  await streamer.close();
  rmSync(dir, { recursive: true, force: true });
});

// Nullable doubles, dictionary-encoded strings, timestamps, UUIDs: what the exports hold.
const rowsOf = (from: number, count: number) => `
  SELECT number AS n, toString(number % 1000) AS s, toDateTime64('2026-01-01 00:00:00.123', 3, 'UTC') + number AS t,
         if(number % 3 = 0, NULL, number / 8) AS f, toUUID('00000000-0000-0000-0000-000000000001') AS u
  FROM numbers(${from}, ${count}) SETTINGS ${PARQUET_SETTINGS}`;

const arrayBuffer = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;

async function parts(query: string): Promise<Buffer[]> {
  const files: Buffer[] = [];
  for await (const chunk of streamer.stream(query, {}, 'Parquet')) files.push(chunk.data);
  return files;
}

describe('ParquetConcat', () => {
  it('joins files of several row groups, empty ones included, into one file both readers read whole', async () => {
    const files = [...(await parts(rowsOf(0, 150_000))), ...(await parts(rowsOf(0, 0))), ...(await parts(rowsOf(150_000, 10)))];
    // chDB streams one complete file per block: the first query alone gives several.
    expect(files.length).toBeGreaterThan(3);
    const file = new ParquetConcat();
    const out: Buffer[] = [];
    let counted = 0;
    for (const f of files) {
      const part = file.add(f);
      counted += part.rows;
      out.push(part.data);
    }
    out.push(file.finish());
    const joined = Buffer.concat(out);
    expect(counted).toBe(150_010);

    const meta = parquetMetadata(arrayBuffer(joined));
    expect(Number(meta.num_rows)).toBe(150_010);
    expect(meta.row_groups).toHaveLength(files.reduce((n, f) => n + parquetMetadata(arrayBuffer(f)).row_groups.length, 0));
    // Every column chunk where the footer says: ascending, inside the file, before the footer.
    const offsets = meta.row_groups.flatMap((g) => g.columns.map((c) => Number(c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset)));
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(offsets[0]).toBe(4);
    expect(offsets.at(-1)!).toBeLessThan(joined.length - 8 - joined.readUInt32LE(joined.length - 8));
    const rows = await parquetReadObjects({ file: arrayBuffer(joined) });
    expect(rows).toHaveLength(150_010);
    for (const i of [0, 1, 65_535, 65_536, 149_999, 150_009]) {
      expect(rows[i]).toEqual({
        n: BigInt(i),
        s: String(i % 1000),
        t: new Date(Date.parse('2026-01-01T00:00:00.123Z') + i * 1000),
        f: i % 3 === 0 ? null : i / 8,
        u: '00000000-0000-0000-0000-000000000001',
      });
    }

    const onDisk = path.join(dir, 'joined.parquet');
    writeFileSync(onDisk, joined);
    const [check] = await parts(`SELECT count() AS c, sum(n) AS total, countIf(f IS NULL) AS nulls, max(t) AS last FROM file('${onDisk}', Parquet) SETTINGS ${PARQUET_SETTINGS}`);
    const [read] = await parquetReadObjects({ file: arrayBuffer(check!) });
    expect(read).toEqual({ c: 150_010n, total: BigInt((150_009 * 150_010) / 2), nulls: 50_004n, last: new Date(Date.parse('2026-01-01T00:00:00.123Z') + 150_009_000) });
  });

  it('an empty file alone gives a valid file of no rows with the schema', async () => {
    const file = new ParquetConcat();
    const [empty] = await parts(rowsOf(0, 0));
    const joined = Buffer.concat([file.add(empty!).data, file.finish()]);
    expect(parquetMetadata(arrayBuffer(joined)).schema.slice(1).map((c) => c.name)).toEqual(['n', 's', 't', 'f', 'u']);
    expect(await parquetReadObjects({ file: arrayBuffer(joined) })).toEqual([]);
  });

  it('refuses what is not a complete Parquet file, and a footer without any file', () => {
    expect(() => new ParquetConcat().add(Buffer.from('PAR1 truncated'))).toThrow('not a complete Parquet file');
    expect(() => new ParquetConcat().finish()).toThrow('no schema');
  });
});

describe('serverStreamer Parquet', () => {
  it('asks the server for FORMAT Parquet with bound parameters and yields its answer as one file', async () => {
    const [answer] = await parts(rowsOf(0, 10));
    const asked: { body: string; url: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        asked.push({ body, url: req.url ?? '' });
        // Sent in small pieces, as a network would: the streamer must not take a piece for a file.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        for (let i = 0; i < answer!.length; i += 100) res.write(answer!.subarray(i, i + 100));
        res.end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = createClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    try {
      const chunks = [];
      for await (const chunk of serverStreamer(client).stream('SELECT {x:String} AS x', { x: 'hi' }, 'Parquet')) chunks.push(chunk);
      expect(chunks).toHaveLength(1);
      expect(chunks[0]!.data.equals(answer!)).toBe(true);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.body).toBe('SELECT {x:String} AS x\nFORMAT Parquet');
      expect(new URL(asked[0]!.url, 'http://x').searchParams.get('param_x')).toBe('hi');
      expect(new ParquetConcat().add(chunks[0]!.data).rows).toBe(10);
    } finally {
      await client.close();
      server.close();
    }
  });
});
