import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Everything of v1 that is on its way out, with its dates. This one list drives the
 * `Deprecation`/`Sunset` headers (RFC 9745, RFC 8594), the `deprecated` marks of the OpenAPI
 * document and GET /v1/deprecations, so the three cannot disagree.
 */
export interface Deprecation {
  id: string;
  /** `endpoint`: the whole operation; `parameter`: one query parameter, flagged only when sent. */
  kind: 'endpoint' | 'parameter';
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify route pattern (`/v1/things/:id`). */
  route: string;
  parameter: string | null;
  /** UTC day from which it is deprecated. */
  deprecated_at: string;
  /** UTC day after which it may stop working. */
  sunset_at: string;
  replacement: string;
  description: string;
}

export const DEPRECATIONS: readonly Deprecation[] = [
  {
    id: 'anomalies-offset',
    kind: 'parameter',
    method: 'GET',
    route: '/v1/anomalies',
    parameter: 'offset',
    deprecated_at: '2026-11-24',
    sunset_at: '2027-11-24',
    replacement: 'cursor',
    description:
      'The anomaly listing pages with `cursor` (spec, recorded wire changes). `offset` is still honoured on a first page ' +
      '(no cursor) for clients written against the offset listing; the response carries next_cursor to continue with.',
  },
];

const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`);

/** RFC 9745: a structured-field date, `@` and the Unix time in seconds. */
export const deprecationHeader = (d: Deprecation) => `@${dayStart(d.deprecated_at).getTime() / 1000}`;
/** RFC 8594: an HTTP-date. */
export const sunsetHeader = (d: Deprecation) => dayStart(d.sunset_at).toUTCString();

export function deprecationsOf(method: string, route: string | undefined): Deprecation[] {
  return DEPRECATIONS.filter((d) => d.method === method && d.route === route);
}

function appliesTo(d: Deprecation, request: FastifyRequest): boolean {
  if (d.kind === 'endpoint') return true;
  const query = request.query as Record<string, unknown> | undefined;
  return query?.[d.parameter!] !== undefined;
}

/** Deprecated routes, and requests that used a deprecated parameter, answer with the headers. */
export function registerDeprecationHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const applied = deprecationsOf(request.method, request.routeOptions.url).filter((d) => appliesTo(d, request));
    if (applied.length === 0) return payload;
    // The earliest date and the nearest sunset are the ones a client must act on.
    const deprecation = applied.reduce((a, b) => (a.deprecated_at <= b.deprecated_at ? a : b));
    const sunset = applied.reduce((a, b) => (a.sunset_at <= b.sunset_at ? a : b));
    reply.header('deprecation', deprecationHeader(deprecation));
    reply.header('sunset', sunsetHeader(sunset));
    reply.header('link', '</v1/deprecations>; rel="deprecation"; type="application/json"');
    return payload;
  });
}
