import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Config } from '../../config.js';
import { PUBLIC } from '../../platform/access.js';

/** `npm run web:build` writes the dashboard here; the same relative place from src/ and from dist/. */
export const WEB_DIST = path.resolve(import.meta.dirname, '../../../web/dist');

/**
 * A browser navigating to a page of the dashboard: a GET that accepts HTML, outside the API. Only
 * such requests reach the SPA fallback, so an unknown `/v1/...` path (or any request that is not a
 * page load) still gets the JSON 404, and API routes never change.
 */
const pageNavigation = {
  name: 'dashboardPage',
  storage() {
    const handlers = new Map<string, unknown>();
    return {
      get: (value: string) => (handlers.get(value) ?? null) as never,
      set: (value: string, handler: unknown) => void handlers.set(value, handler),
    };
  },
  deriveConstraint(req: { method?: string; url?: string; headers: Record<string, string | string[] | undefined> }) {
    const url = req.url ?? '';
    const accept = String(req.headers.accept ?? '');
    const api = url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
    return !api && accept.includes('text/html') ? 'yes' : 'no';
  },
};

/**
 * The page's own rules: scripts and styles from this origin only (nothing inline), calls to this
 * origin and to the identity provider (its token endpoint may live on another https origin).
 */
function contentSecurityPolicy(oidcIssuer: string | undefined): string {
  const idp = oidcIssuer ? ` ${new URL(oidcIssuer).origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' https:${idp}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const hidden = { hide: true };

/** The web dashboard (web/, built to static files) at `/`, same origin as the API. */
export function webRoutes(auth: Config['auth'], root = WEB_DIST): FastifyPluginAsync {
  return async (app) => {
    if (!existsSync(path.join(root, 'index.html'))) {
      app.log.warn({ root }, 'the web dashboard is not built: run `npm run web:build` (npm start does) to serve it at /');
    }
    // Only reply.sendFile: the routes below are declared here, each with its access policy.
    await app.register(fastifyStatic, { root, serve: false });
    app.addConstraintStrategy(pageNavigation);

    const csp = contentSecurityPolicy(auth.oidc?.issuer);
    // index.html names the current hashed bundles: never cached, always revalidated.
    const sendPage = (reply: FastifyReply) =>
      reply
        .headers({
          'cache-control': 'no-cache',
          'content-security-policy': csp,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'same-origin',
        })
        .sendFile('index.html', root, { cacheControl: false });

    app.get('/', { config: { access: PUBLIC }, schema: hidden }, async (_request, reply) => sendPage(reply));

    // Content-hashed file names: a changed file is a new URL, so caching forever is safe.
    app.get<{ Params: { '*': string } }>('/assets/*', { config: { access: PUBLIC }, schema: hidden }, async (request, reply) =>
      reply.sendFile(request.params['*'], path.join(root, 'assets'), { maxAge: '365d', immutable: true }),
    );

    // Deep links (/traces/…): the SPA routes them in the browser.
    const page = { config: { access: PUBLIC }, schema: hidden, constraints: { dashboardPage: 'yes' } };
    app.get('/*', page, async (_request, reply) => sendPage(reply));
    // The dashboard's metrics page shares its path with the Prometheus endpoint (health/routes.ts):
    // a browser reloading it gets the page, a scraper (which does not ask for HTML) the exposition.
    app.get('/metrics', page, async (_request, reply) => sendPage(reply));
  };
}
