/** Nanosecond-exact timestamps: OTLP carries nanoseconds and must round-trip unchanged. */

const NS_PER_MS = 1_000_000n;

/** ISO 8601 with any fractional precision and offset → nanoseconds since the epoch. */
export function isoToNanos(iso: string): bigint {
  const match = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$/i.exec(iso);
  if (!match) throw new RangeError(`not an ISO 8601 date-time: ${iso}`);
  const wholeSeconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(wholeSeconds)) throw new RangeError(`not an ISO 8601 date-time: ${iso}`);
  const fraction = BigInt((match[2] ?? '').padEnd(9, '0').slice(0, 9));
  return BigInt(wholeSeconds) * NS_PER_MS + fraction;
}

/** The UTC calendar month of `now` (YYYY-MM-01), as the monthly quota tables key it. */
export const usageMonth = (now: Date): string => `${now.toISOString().slice(0, 7)}-01`;

export const nanosToMillis = (ns: bigint): number => Number(ns / NS_PER_MS);

/** ClickHouse DateTime64(9) literal in UTC: `YYYY-MM-DD hh:mm:ss.nnnnnnnnn`. */
export function nanosToClickHouse(ns: bigint): string {
  const ms = ns / NS_PER_MS;
  const base = new Date(Number(ms)).toISOString().slice(0, 19).replace('T', ' ');
  const fraction = (((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n).toString().padStart(9, '0');
  return `${base}.${fraction}`;
}

export const millisToClickHouse = (ms: number): string => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

/** ClickHouse `YYYY-MM-DD hh:mm:ss[.fff…]` (UTC) → ISO 8601 with milliseconds. */
export function clickHouseToIso(value: string): string {
  const [date, time = '00:00:00'] = value.split(' ');
  const [clock, fraction = ''] = time.split('.');
  return `${date}T${clock}.${fraction.padEnd(3, '0').slice(0, 3)}Z`;
}

const EARLIEST_ACCEPTED_NS = BigInt(Date.UTC(2000, 0, 1)) * NS_PER_MS;
const FUTURE_TOLERANCE_MS = 24 * 60 * 60 * 1000;

/**
 * Span and trace times are accepted from 2000-01-01 up to a day ahead of this server's clock
 * (client clocks drift). Beyond that a time is a bug in the sender, and one such time spread over
 * many monthly partitions would make the shared group-commit insert pay for it.
 */
export function implausibleTime(ns: bigint, nowMs = Date.now()): string | null {
  if (ns < EARLIEST_ACCEPTED_NS) return 'is before 2000-01-01';
  if (ns > BigInt(nowMs + FUTURE_TOLERANCE_MS) * NS_PER_MS) return 'is more than 24 h in the future';
  return null;
}
