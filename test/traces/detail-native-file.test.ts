import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceRepository } from '../../src/modules/traces/repo.js';
import { SPAN_JSON_SELECT_COLUMNS, spansJson } from '../../src/modules/traces/span-json.js';
import { answerThroughFile } from '../../src/stores/clickhouse-outfile.js';
import { aSpan, aTrace } from '../builders/traces.js';
import { createTenant, startApp, type TestContext } from '../helpers/app.js';
import { ingestTraces } from '../helpers/trace-api.js';

/**
 * The spans of GET /v1/traces/{id} read through a file (answerThroughFile): the embedded engine
 * writes its Native answer to a file that is read into a buffer reused from request to request,
 * instead of chDB copying each answer into a new Buffer (which cost a full GC per request).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await startApp();
});
afterAll(async () => ctx?.close());

/** The path inside the SQL string literal answerThroughFile hands to `write`. */
const pathOf = (literal: string): string => {
  expect(literal).toMatch(/^'[A-Za-z0-9_./-]+\.bin'$/);
  return literal.slice(1, -1);
};

/** Where ClickHouse's answer would go: the file the engine would write, through a test's own hands. */
const writing = (bytes: Buffer) => {
  const seen: string[] = [];
  const write = async (literal: string) => {
    const file = pathOf(literal);
    seen.push(file);
    writeFileSync(file, bytes);
  };
  return { seen, write };
};

describe('the Native answer through a file', () => {
  it('is what the engine answers directly, for the detail and the tree, and leaves no file behind', async () => {
    expect(ctx.stores.ch.embedded).toBe(true); // the route through a file is the embedded engine's
    const t = await createTenant(ctx.app);
    const start = Date.parse('2026-10-10T10:00:00.000Z');
    const spans = Array.from({ length: 300 }, (_, i) =>
      aSpan({ name: `s${i}`, input: `in "${i}"\n`.repeat(i % 7), output: 'é'.repeat(i), start_time: new Date(start + i).toISOString(), end_time: new Date(start + i + 5).toISOString() }),
    );
    const trace = aTrace({ spans });
    await ingestTraces(ctx.app, t, [trace]);
    const [row] = await ctx.stores.ch.rowsFromPrimary<{ tenant_id: string; project_id: string }>(
      'test',
      'SELECT toString(tenant_id) AS tenant_id, toString(project_id) AS project_id FROM spans WHERE trace_id = {id:UUID} LIMIT 1',
      { id: trace.id },
    );
    const repo = traceRepository(ctx.stores.ch);
    for (const kind of ['detail', 'tree'] as const) {
      const { stream } = await ctx.stores.ch.client.exec({
        query: `SELECT ${SPAN_JSON_SELECT_COLUMNS[kind]} FROM spans FINAL WHERE tenant_id = {t:UUID} AND project_id = {p:UUID} AND trace_id = {id:UUID} FORMAT Native`,
        query_params: { t: row!.tenant_id, p: row!.project_id, id: trace.id },
      });
      const direct = spansJson(Buffer.concat((await stream.toArray()) as Buffer[]), kind)!;
      const directText = direct.text.toString('utf8');
      direct.release();
      const read = await repo.spansNativeFromPrimary(row!.tenant_id, row!.project_id, trace.id, kind);
      expect(read.data.length).toBeGreaterThan(10_000);
      const text = spansJson(read.data, kind);
      read.release();
      expect(text!.text.toString('utf8')).toBe(directText);
      expect(JSON.parse(`[${directText}]`).map((span: { name: string }) => span.name)).toEqual(spans.map((span) => span.name));
      text!.release();
    }
    // Read through the file, not answered directly: the next read reuses the buffer given back.
    const once = await repo.spansNativeFromPrimary(row!.tenant_id, row!.project_id, trace.id);
    once.release();
    const twice = await repo.spansNativeFromPrimary(row!.tenant_id, row!.project_id, trace.id);
    expect(twice.data.buffer).toBe(once.data.buffer);
    twice.release();
    // A trace without spans: an empty answer, not an error.
    const none = await repo.spansNativeFromPrimary(row!.tenant_id, row!.project_id, randomUUID());
    expect(none.data.length).toBe(0);
    none.release();
    // The engine's files are gone once read, with their directory.
    let directory = '';
    await answerThroughFile(async (literal) => {
      directory = path.dirname(pathOf(literal));
      writeFileSync(pathOf(literal), '');
    });
    expect(directory).not.toBe('');
    expect(existsSync(directory)).toBe(false);
  });

  it('reads into the buffer given back by the last release, and into another while it is held', async () => {
    // Answers above Buffer's small-allocation pool, so that each buffer has an ArrayBuffer of its own.
    const answer = (c: string) => Buffer.alloc(Buffer.poolSize * 2, c);
    const a = writing(answer('a'));
    const first = await answerThroughFile(a.write);
    expect(first.data.equals(answer('a'))).toBe(true);
    expect(existsSync(a.seen[0]!)).toBe(false);
    const b = writing(answer('b'));
    const held = await answerThroughFile(b.write); // first not released: its bytes must stay
    expect(held.data.buffer).not.toBe(first.data.buffer);
    expect(first.data.equals(answer('a'))).toBe(true);
    expect(held.data.equals(answer('b'))).toBe(true);
    first.release();
    held.release();
    const c = writing(Buffer.from('c'.repeat(Buffer.poolSize)));
    const third = await answerThroughFile(c.write);
    expect([first.data.buffer, held.data.buffer]).toContain(third.data.buffer);
    expect(third.data.toString()).toBe('c'.repeat(Buffer.poolSize)); // only what this answer wrote
    expect(new Set([...a.seen, ...b.seen, ...c.seen]).size).toBe(3); // a file of its own per answer
    third.release();
  });

  it('rejects when the file cannot be written, and removes what was written of it', async () => {
    let file = '';
    await expect(
      answerThroughFile(async (literal) => {
        file = pathOf(literal);
        writeFileSync(file, 'part of an answer');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it('makes a directory of its own for each answer, gone once the answer is read', async () => {
    const directories: string[] = [];
    const write = async (literal: string) => {
      directories.push(path.dirname(pathOf(literal)));
      writeFileSync(pathOf(literal), 'x');
    };
    const [one, two] = await Promise.all([answerThroughFile(write), answerThroughFile(write)]);
    expect(new Set(directories).size).toBe(2);
    for (const directory of directories) expect(existsSync(directory)).toBe(false);
    expect([one.data.toString(), two.data.toString()]).toEqual(['x', 'x']);
    one.release();
    two.release();
  });
});
