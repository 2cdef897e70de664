/**
 * When traces first appear in GET /v1/traces, for traces whose ids and started_at the bench knows.
 *
 * Every `pollMs` (a cycle never overlaps the next) the tracker lists, newest first with limit
 * 1000, only the started_at ranges that still hold unlisted traces it sent: a run of unlisted
 * traces (runs separated by fewer than MERGE_GAP listed ones are merged) becomes windows of about
 * one page each, queried with `from`/`to` (inclusive) and followed through `next_cursor`. The
 * traces listed long ago are therefore not fetched again, and a trace that stays unlisted does not
 * fall off a first page that newer traces fill. A cycle reads at most `maxPagesPerCycle` pages;
 * when it would need more it stops there, the next one starts where it stopped, and the cycle is
 * counted as truncated (the time resolution of those traces is then coarser than `pollMs`).
 *
 * A trace counts as listed at the moment the page that first holds it has arrived (its body read).
 * Traces are numbered by the OTLP factory's request index and trace number; started_at must grow
 * with the index (the OTLP bench's start times do). Requests never reported `sent` are not
 * followed (the OTLP bench's --track-every); their traces must lie outside the polled windows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';
import { distribution } from './stats.js';

const PAGE = 1000;
const MERGE_GAP = 200;

export interface ListingOptions {
  pool: Pool;
  apiKey: string;
  projectId: string;
  pollMs: number;
  maxPagesPerCycle: number;
  /** The first request index of the traces this tracker follows. */
  firstRequest: number;
  tracesPerRequest: number;
  spansPerTrace: number;
  locate(uuid: string): { index: number; t: number } | undefined;
}

export class ListingTracker {
  private readonly startedAt: number[] = []; // wall ms, per trace (local number)
  private readonly sentAt: number[] = []; // performance ms
  private readonly ackAt: number[] = [];
  private readonly listedAt: number[] = [];
  private readonly spansWhenListed: number[] = [];
  /** One past the highest local number sent (holes: untracked requests). */
  private count = 0;
  private sentTraces = 0;
  private firstUnlisted = 0;
  private acked = 0;
  private ackedAndListed = 0;
  private listed = 0;
  private rotor = 0;
  private running: Promise<void> | undefined;
  private stopping = false;
  private readonly cycles: number[] = [];
  private readonly pollRequests: number[] = [];
  private truncatedCycles = 0;
  private pollErrors: Record<string, number> = {};
  private pollBytes = 0;
  private foreign = 0;

  constructor(private readonly o: ListingOptions) {}

  private local(index: number, t: number): number {
    return (index - this.o.firstRequest) * this.o.tracesPerRequest + t;
  }

  /** Request `index` was handed to the client; its traces started at `startedAtMs` (wall clock). */
  sent(index: number, startedAtMs: number, atMs: number): void {
    for (let t = 0; t < this.o.tracesPerRequest; t += 1) {
      const n = this.local(index, t);
      if (this.sentAt[n] === undefined) this.sentTraces += 1;
      this.startedAt[n] = startedAtMs;
      this.sentAt[n] = atMs;
      this.ackAt[n] ??= NaN;
      this.listedAt[n] ??= NaN;
    }
    this.count = Math.max(this.count, this.local(index, this.o.tracesPerRequest));
    this.firstUnlisted = Math.min(this.firstUnlisted, this.local(index, 0));
  }

  /** Request `index` was acknowledged (all its spans accepted). */
  ackedRequest(index: number, atMs: number): void {
    for (let t = 0; t < this.o.tracesPerRequest; t += 1) {
      const n = this.local(index, t);
      this.ackAt[n] = atMs;
      this.acked += 1;
      if (!Number.isNaN(this.listedAt[n]!)) this.ackedAndListed += 1;
    }
  }

  start(): void {
    this.stopping = false;
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    this.running = undefined;
  }

  /**
   * Keeps polling until every acknowledged trace is listed or `graceMs` has passed; returns
   * whether all were. Call once every request has been answered.
   */
  async settle(graceMs: number): Promise<boolean> {
    this.start();
    const deadline = performance.now() + graceMs;
    while (this.ackedAndListed < this.acked && performance.now() < deadline) await sleep(20);
    return this.ackedAndListed >= this.acked;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const started = performance.now();
      await this.cycle();
      this.cycles.push(performance.now() - started);
      const rest = this.o.pollMs - (performance.now() - started);
      if (rest > 0 && !this.stopping) await sleep(rest);
    }
  }

  /** [from, to] local-number ranges of about one page each that still hold unlisted sent traces. */
  private windows(): [number, number][] {
    // Past listed traces and numbers never sent (untracked requests); `sent` moves it back if needed.
    while (
      this.firstUnlisted < this.count &&
      (this.sentAt[this.firstUnlisted] === undefined || !Number.isNaN(this.listedAt[this.firstUnlisted]!))
    ) {
      this.firstUnlisted += 1;
    }
    const runs: [number, number][] = [];
    let gap = 0;
    for (let n = this.firstUnlisted; n < this.count; n += 1) {
      if (this.sentAt[n] === undefined) continue; // untracked, or not handed to the client yet
      if (!Number.isNaN(this.listedAt[n]!)) {
        gap += 1;
        continue;
      }
      const last = runs[runs.length - 1];
      if (last && gap <= MERGE_GAP) last[1] = n;
      else runs.push([n, n]);
      gap = 0;
    }
    const windows: [number, number][] = [];
    for (const [from, to] of runs) for (let a = from; a <= to; a += PAGE) windows.push([a, Math.min(to, a + PAGE - 1)]);
    return windows;
  }

  private async cycle(): Promise<void> {
    const windows = this.windows();
    if (windows.length === 0) return;
    let pages = 0;
    const first = this.rotor % windows.length;
    for (let k = 0; k < windows.length; k += 1) {
      if (pages >= this.o.maxPagesPerCycle) {
        this.truncatedCycles += 1;
        this.rotor = first + k;
        return;
      }
      const [a, b] = windows[(first + k) % windows.length]!;
      let cursor: string | undefined;
      do {
        const page = await this.page(this.startedAt[a]!, this.startedAt[b]!, cursor);
        pages += 1;
        cursor = page?.next ?? undefined;
      } while (cursor && pages < this.o.maxPagesPerCycle);
    }
    this.rotor = 0;
  }

  private async page(fromMs: number, toMs: number, cursor: string | undefined): Promise<{ next: string | null } | undefined> {
    const q = new URLSearchParams({ project_id: this.o.projectId, limit: String(PAGE), from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() });
    if (cursor) q.set('cursor', cursor);
    const sent = performance.now();
    try {
      const res = await this.o.pool.request({ path: `/v1/traces?${q}`, method: 'GET', headers: { authorization: `Bearer ${this.o.apiKey}` } });
      const text = await res.body.text();
      const at = performance.now();
      this.pollRequests.push(at - sent);
      this.pollBytes += text.length;
      if (res.statusCode !== 200) {
        this.pollErrors[res.statusCode] = (this.pollErrors[res.statusCode] ?? 0) + 1;
        return undefined;
      }
      const body = JSON.parse(text) as { traces: { id: string; span_count: number }[]; has_more: boolean; next_cursor: string | null };
      for (const trace of body.traces) {
        const where = this.o.locate(trace.id);
        if (!where) {
          this.foreign += 1;
          continue;
        }
        const n = this.local(where.index, where.t);
        if (n < 0 || n >= this.count || this.sentAt[n] === undefined) {
          this.foreign += 1;
          continue;
        }
        if (!Number.isNaN(this.listedAt[n]!)) continue;
        this.listedAt[n] = at;
        this.spansWhenListed[n] = trace.span_count;
        this.listed += 1;
        if (!Number.isNaN(this.ackAt[n]!)) this.ackedAndListed += 1;
      }
      return { next: body.has_more ? body.next_cursor : null };
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'error';
      this.pollErrors[code] = (this.pollErrors[code] ?? 0) + 1;
      return undefined;
    }
  }

  /** Performance time at which the last acknowledged trace was listed (NaN if some never were). */
  lastListedMs(): number {
    let last = 0;
    for (let n = 0; n < this.count; n += 1) {
      if (Number.isNaN(this.ackAt[n] ?? NaN)) continue;
      const at = this.listedAt[n] ?? NaN;
      if (Number.isNaN(at)) return NaN;
      last = Math.max(last, at);
    }
    return last;
  }

  /** Lag = listed − acknowledged per acknowledged trace (0 when listed before its acknowledgement). */
  report() {
    const lags: number[] = [];
    const sinceSent: number[] = [];
    let beforeAck = 0;
    let incomplete = 0;
    let neverListed = 0;
    const thirds: number[][] = [[], [], []];
    const ackedIdx: number[] = [];
    for (let n = 0; n < this.count; n += 1) if (!Number.isNaN(this.ackAt[n] ?? NaN)) ackedIdx.push(n);
    ackedIdx.forEach((n, k) => {
      const listed = this.listedAt[n]!;
      if (Number.isNaN(listed)) {
        neverListed += 1;
        return;
      }
      const lag = listed - this.ackAt[n]!;
      if (lag < 0) beforeAck += 1;
      lags.push(Math.max(0, lag));
      sinceSent.push(listed - this.sentAt[n]!);
      thirds[Math.min(2, Math.floor((3 * k) / ackedIdx.length))]!.push(Math.max(0, lag));
      if ((this.spansWhenListed[n] ?? 0) < this.o.spansPerTrace) incomplete += 1;
    });
    const cycleStats = distribution(this.cycles);
    return {
      traces_sent: this.sentTraces,
      traces_acknowledged: this.acked,
      acknowledged_listed: this.ackedAndListed,
      acknowledged_never_listed: neverListed,
      listed_before_acknowledgement: beforeAck,
      listed_with_fewer_spans_than_sent: incomplete,
      lag_ms: distribution(lags),
      // A listing backlog that grows while acknowledgements keep up shows as a later third lagging more.
      lag_by_third_ms: thirds.map((t) => {
        const d = distribution(t);
        return { n: d.n, p50: d.p50_ms, p99: d.p99_ms };
      }),
      listed_since_sent_ms: distribution(sinceSent),
      polling: {
        poll_ms: this.o.pollMs,
        cycles: this.cycles.length,
        cycle_ms: { p50: cycleStats.p50_ms, p99: cycleStats.p99_ms, max: cycleStats.max_ms },
        truncated_cycles: this.truncatedCycles,
        requests: this.pollRequests.length,
        request_ms: (({ p50_ms, p99_ms, max_ms }) => ({ p50: p50_ms, p99: p99_ms, max: max_ms }))(distribution(this.pollRequests)),
        mib_read: +(this.pollBytes / 2 ** 20).toFixed(1),
        errors: this.pollErrors,
        other_traces_seen: this.foreign,
      },
    };
  }
}
