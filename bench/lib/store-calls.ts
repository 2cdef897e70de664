/**
 * The server's time in each store call (its Prometheus histogram store_call_duration_seconds on
 * /metrics), so a bench can say where a request's time went: read before and after the measured
 * requests, the difference per request.
 */
export type StoreCallTotals = Map<string, { seconds: number; calls: number }>;

export async function storeCallTotals(serverUrl: string): Promise<StoreCallTotals> {
  const text = await (await fetch(`${serverUrl}/metrics`)).text();
  const totals: StoreCallTotals = new Map();
  for (const match of text.matchAll(/^store_call_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    const key = `${labels.store}:${labels.op}`;
    const entry = totals.get(key) ?? { seconds: 0, calls: 0 };
    if (match[1] === 'sum') entry.seconds = Number(match[3]);
    else entry.calls = Number(match[3]);
    totals.set(key, entry);
  }
  return totals;
}

/** Per request, each store call that ran between two readings: calls and milliseconds (mean). */
export function storeCallsPerRequest(before: StoreCallTotals, after: StoreCallTotals, requests: number): Record<string, { calls: number; ms: number }> {
  const perRequest: Record<string, { calls: number; ms: number }> = {};
  for (const [key, { seconds, calls }] of after) {
    const earlier = before.get(key) ?? { seconds: 0, calls: 0 };
    if (calls === earlier.calls) continue;
    perRequest[key] = { calls: +((calls - earlier.calls) / requests).toFixed(2), ms: +(((seconds - earlier.seconds) * 1000) / requests).toFixed(2) };
  }
  return perRequest;
}
