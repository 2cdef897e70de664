/**
 * Open-loop load at a fixed rate: request i is due at start + i/rate, whatever happened to the
 * ones before it, and its latency counts from when it was due (so a stalled server shows up as
 * latency instead of as fewer requests: no coordinated omission). autocannon's own rate limit
 * releases each second's quota as one back-to-back burst per connection, which would measure
 * bursts at full load instead of a steady half rate; hence this small generator.
 */
export interface PacedResult {
  sent: number;
  ok: number;
  failed: number;
  statuses: Record<string, number>;
  latenciesMs: number[];
  seconds: number;
}

export async function pacedLoad(o: {
  url: string;
  headers: Record<string, string>;
  body: (index: number) => string;
  firstIndex: number;
  ratePerSecond: number;
  seconds: number;
  maxInFlight?: number;
}): Promise<PacedResult> {
  const total = Math.max(1, Math.round(o.ratePerSecond * o.seconds));
  const intervalMs = 1000 / o.ratePerSecond;
  const maxInFlight = o.maxInFlight ?? 64;
  const result: PacedResult = { sent: 0, ok: 0, failed: 0, statuses: {}, latenciesMs: [], seconds: 0 };
  const inFlight = new Set<Promise<void>>();
  const start = performance.now();
  for (let i = 0; i < total; i += 1) {
    const due = start + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
    const body = o.body(o.firstIndex + i);
    const request = (async () => {
      try {
        const res = await fetch(o.url, { method: 'POST', headers: o.headers, body });
        await res.arrayBuffer();
        result.statuses[res.status] = (result.statuses[res.status] ?? 0) + 1;
        if (res.ok) {
          result.ok += 1;
          result.latenciesMs.push(performance.now() - due);
        } else result.failed += 1;
      } catch {
        result.failed += 1;
        result.statuses.error = (result.statuses.error ?? 0) + 1;
      }
    })();
    result.sent += 1;
    inFlight.add(request);
    void request.finally(() => inFlight.delete(request));
  }
  await Promise.all(inFlight);
  result.seconds = (performance.now() - start) / 1000;
  return result;
}
