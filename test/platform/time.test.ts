import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clickHouseToIso, isoToNanos, millisToClickHouse, nanosToClickHouse } from '../../src/platform/time.js';

// The straightforward conversions the memoised ones must agree with, whatever order times come in.
const NS_PER_MS = 1_000_000n;
const pad = (n: bigint | number, width: number) => String(n).padStart(width, '0');
const utcSecond = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -((-a + b - 1n) / b));

const reference = {
  nanos(ns: bigint): string {
    const seconds = floorDiv(ns, 1_000_000_000n);
    return `${utcSecond(Number(seconds) * 1000)}.${pad(ns - seconds * 1_000_000_000n, 9)}`;
  },
  millis(ms: number): string {
    return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
  },
};

// 1970 up to 2200: what a span can carry once ingest's plausibility check has passed, and more.
const nanos = fc.bigInt({ min: 0n, max: 7_258_118_400_000n * NS_PER_MS });
const sameSecondRuns = fc.array(fc.tuple(nanos, fc.array(fc.integer({ min: 0, max: 999_999_999 }), { maxLength: 4 })), { maxLength: 20 });

describe('time conversions', () => {
  it('nanosToClickHouse and millisToClickHouse agree with the plain formatting, in any order, times of one second in a row', () => {
    fc.assert(
      fc.property(sameSecondRuns, (runs) => {
        for (const [ns, offsets] of runs) {
          const second = ns - (ns % 1_000_000_000n);
          for (const t of [ns, ...offsets.map((o) => second + BigInt(o))]) {
            expect(nanosToClickHouse(t)).toBe(reference.nanos(t));
            const ms = Number(t / NS_PER_MS);
            expect(millisToClickHouse(ms)).toBe(reference.millis(ms));
          }
        }
      }),
    );
  });

  it('clickHouseToIso gives ISO 8601 with milliseconds for any fractional precision, DateTime64(3) by its fast path', () => {
    fc.assert(
      fc.property(nanos, fc.integer({ min: 0, max: 9 }), (ns, digits) => {
        const [date, time] = reference.nanos(ns).split(' ');
        const [clock, fraction] = time!.split('.');
        const value = `${date} ${clock}${digits > 0 ? `.${fraction!.slice(0, digits)}` : ''}`;
        expect(clickHouseToIso(value)).toBe(`${date}T${clock}.${fraction!.slice(0, digits).padEnd(3, '0').slice(0, 3)}Z`);
      }),
    );
    expect(clickHouseToIso('2026-11-26 10:00:00.123')).toBe('2026-11-26T10:00:00.123Z');
    expect(clickHouseToIso('2026-11-26 10:00:00')).toBe('2026-11-26T10:00:00.000Z');
  });

  it('isoToNanos reads any fractional precision and offset', () => {
    fc.assert(
      fc.property(nanos, fc.integer({ min: 0, max: 9 }), fc.constantFrom('Z', 'z', '+02:00', '-05:30'), (ns, digits, offset) => {
        const [date, time] = reference.nanos(ns).split(' ');
        const [clock, fraction] = time!.split('.');
        const kept = fraction!.slice(0, digits);
        const iso = `${date}T${clock}${digits > 0 ? `.${kept}` : ''}${offset}`;
        const expected = BigInt(Date.parse(`${date}T${clock}${offset.toUpperCase()}`)) * NS_PER_MS + BigInt(kept.padEnd(9, '0'));
        expect(isoToNanos(iso)).toBe(expected);
      }),
    );
  });

  it('refuses what is not an ISO 8601 date-time, also right after a valid one of the same second', () => {
    expect(isoToNanos('2026-11-26T10:00:00.5Z')).toBe(BigInt(Date.parse('2026-11-26T10:00:00Z')) * NS_PER_MS + 500_000_000n);
    for (const bad of ['2026-11-26 10:00:00Z', '2026-13-26T10:00:00Z', '2026-11-26T10:00:00.Z', 'yesterday']) {
      expect(() => isoToNanos(bad)).toThrow(RangeError);
    }
    expect(() => millisToClickHouse(Number.NaN)).toThrow(RangeError);
  });
});
