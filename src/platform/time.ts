/** Nanosecond-exact timestamps: OTLP carries nanoseconds and must round-trip unchanged. */

const NS_PER_MS = 1_000_000n;

const NS_PER_S = 1_000_000_000n;

/**
 * Ingest converts every span's two times in and out of these formats (millions per minute at
 * load), and a request's times mostly share their second: the whole-second parts are memoised
 * (one entry each), and the nanosecond arithmetic is done on the second and its fraction apart.
 */
class LastSecond<K, V> {
  private key: K | undefined;
  private value!: V;
  constructor(private readonly compute: (key: K) => V) {}
  get(key: K): V {
    if (key !== this.key) {
      this.value = this.compute(key);
      this.key = key;
    }
    return this.value;
  }
}

const ISO = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$/i;
const secondsOfIso = new LastSecond((wholeSecondIso: string) => {
  const ms = Date.parse(wholeSecondIso);
  return Number.isNaN(ms) ? null : BigInt(ms) * NS_PER_MS;
});

/** ISO 8601 with any fractional precision and offset → nanoseconds since the epoch. */
export function isoToNanos(iso: string): bigint {
  const match = ISO.exec(iso);
  const wholeSecond = match ? secondsOfIso.get(`${match[1]}${match[3]}`) : null;
  if (wholeSecond === null) throw new RangeError(`not an ISO 8601 date-time: ${iso}`);
  const fraction = match![2];
  return fraction === undefined ? wholeSecond : wholeSecond + BigInt(Number(fraction.padEnd(9, '0').slice(0, 9)));
}

/** The UTC calendar month of `now` (YYYY-MM-01), as the monthly quota tables key it. */
export const usageMonth = (now: Date): string => `${now.toISOString().slice(0, 7)}-01`;

export const nanosToMillis = (ns: bigint): number => Number(ns / NS_PER_MS);

// BigInt division truncates toward zero; these round toward -inf / +inf, also before 1970.
export const floorMillis = (ns: bigint): number => Number(ns >= 0n ? ns / NS_PER_MS : -((-ns + NS_PER_MS - 1n) / NS_PER_MS));
export const ceilMillis = (ns: bigint): number => -floorMillis(-ns);

/** `YYYY-MM-DD hh:mm:ss` (UTC) of a whole second since the epoch. */
const clickHouseSecond = new LastSecond((seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' '));

/** ClickHouse DateTime64(9) literal in UTC: `YYYY-MM-DD hh:mm:ss.nnnnnnnnn`. */
export function nanosToClickHouse(ns: bigint): string {
  let fraction = ns % NS_PER_S;
  if (fraction < 0n) fraction += NS_PER_S;
  const seconds = Number((ns - fraction) / NS_PER_S);
  return `${clickHouseSecond.get(seconds)}.${String(fraction).padStart(9, '0')}`;
}

/** ClickHouse DateTime64(3) literal in UTC: `YYYY-MM-DD hh:mm:ss.fff`. */
export function millisToClickHouse(ms: number): string {
  const whole = Math.floor(ms);
  const fraction = ((whole % 1000) + 1000) % 1000;
  return `${clickHouseSecond.get((whole - fraction) / 1000)}.${String(fraction).padStart(3, '0')}`;
}

/** ClickHouse `YYYY-MM-DD hh:mm:ss[.fff…]` (UTC) → ISO 8601 with milliseconds. */
export function clickHouseToIso(value: string): string {
  // DateTime64(3), the common case (three per span of a trace detail): same text, without splitting.
  if (value.length === 23 && value.charCodeAt(10) === 32 && value.charCodeAt(19) === 46) return `${value.slice(0, 10)}T${value.slice(11)}Z`;
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
