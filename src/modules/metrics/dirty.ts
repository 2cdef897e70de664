import type { Redis } from 'ioredis';
import { clickHouseToIso } from '../../platform/time.js';

export const MINUTE_MS = 60_000;

/** One (tenant, minute) whose traces changed and whose rollup must be recomputed. */
export interface DirtyMinute {
  tenantId: string;
  /** Start of the UTC minute, epoch ms. */
  minuteMs: number;
}

export interface ClaimedMinute extends DirtyMinute {
  member: string;
  lease: number;
}

export interface DirtyTrackerOptions {
  /** How long an expectation (mark before a write) waits before it is due: longer than any write can take. */
  settleMs: number;
  /** How long a claimed minute stays invisible to other claimers before it is due again (crashed worker). */
  leaseMs: number;
}

const DEFAULTS: DirtyTrackerOptions = { settleMs: 300_000, leaseMs: 120_000 };

// Claims up to ARGV[2] due members (score <= ARGV[1]), oldest first, leasing each until ARGV[3].
const CLAIM = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[3], m) end
return due`;

// Removes members still holding the lease ARGV[1]; a member marked again since its claim stays.
const COMPLETE = `
local removed = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    removed = removed + 1
  end
end
return removed`;

const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS) * MINUTE_MS;
/** A `traces.started_at` as written (`YYYY-MM-DD hh:mm:ss.fff`, UTC) or as ISO 8601 → epoch ms. */
const rowStartMs = (startedAt: string): number => Date.parse(startedAt.includes('T') ? startedAt : clickHouseToIso(startedAt));

/**
 * Dirty (tenant, minute) slices of the metrics rollup, in one Redis sorted set scored by the time
 * each becomes due. Members are `d|tenant|minute` (due now: data is committed) or `p|tenant|minute`
 * (expected: a write is about to happen; due only after `settleMs`). A claim leases members by
 * moving their score forward; completion removes only members whose score is still the lease, so
 * a mark that arrives during a recomputation is never lost. Due marks only lower a score (ZADD LT),
 * expectations only raise theirs (ZADD GT): neither can hide the other's pending work.
 */
export class MetricsDirtyTracker {
  private readonly key: string;
  private readonly options: DirtyTrackerOptions;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    options: Partial<DirtyTrackerOptions> = {},
  ) {
    this.key = `${prefix}:metrics:dirty`;
    this.options = { ...DEFAULTS, ...options };
  }

  /** Traces of `tenantId` starting at these times were written or rewritten: recompute their minutes. */
  async mark(tenantId: string, startedAtMs: readonly number[], now = Date.now()): Promise<void> {
    await this.add('d', 'LT', startedAtMs.map((ms) => ({ tenantId, minuteMs: minuteOf(ms) })), now);
  }

  /**
   * Runs a write of trace rows between an expectation and a due mark. The expectation (before the
   * write) fails the write cleanly when Redis is down; the due mark (after) makes the minutes due at
   * once. If that second mark is lost, the expectation still comes due after `settleMs`, when the
   * write has long committed, so acknowledged rows always reach the rollup.
   */
  async aroundWrite<T>(rows: readonly { tenant_id: string; started_at: string }[], write: () => Promise<T>): Promise<T> {
    const minutes = rows.map((r) => ({ tenantId: r.tenant_id, minuteMs: minuteOf(rowStartMs(r.started_at)) }));
    await this.add('p', 'GT', minutes, Date.now() + this.options.settleMs);
    const result = await write();
    await this.add('d', 'LT', minutes, Date.now()).catch(() => {
      // The expectation above comes due after settleMs; the rows are committed either way.
    });
    return result;
  }

  /** Leases up to `max` due minutes; the caller recomputes them and then calls `complete`. */
  async claim(max: number, now = Date.now()): Promise<ClaimedMinute[]> {
    const lease = now + this.options.leaseMs;
    const members = (await this.redis.eval(CLAIM, 1, this.key, now, max, lease)) as string[];
    return members.map((member) => {
      const [, tenantId = '', minute = '0'] = member.split('|');
      return { member, tenantId, minuteMs: Number(minute) * 1000, lease };
    });
  }

  /** Forgets claimed minutes that were not marked again while they were being recomputed. */
  async complete(claimed: readonly ClaimedMinute[]): Promise<void> {
    const byLease = new Map<number, string[]>();
    for (const c of claimed) byLease.set(c.lease, [...(byLease.get(c.lease) ?? []), c.member]);
    for (const [lease, members] of byLease) await this.redis.eval(COMPLETE, 1, this.key, lease, ...members);
  }

  private async add(kind: 'd' | 'p', rule: 'LT' | 'GT', minutes: readonly DirtyMinute[], score: number): Promise<void> {
    const valid = minutes.filter((m) => Number.isFinite(m.minuteMs));
    if (valid.length < minutes.length) throw new RangeError('metrics dirty tracker: a trace start time is not a valid date');
    const members = [...new Set(valid.map((m) => `${kind}|${m.tenantId}|${m.minuteMs / 1000}`))];
    if (members.length === 0) return;
    await this.redis.zadd(this.key, rule, ...members.flatMap((m) => [score, m]));
  }
}
