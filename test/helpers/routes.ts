import type { RouteOptions } from 'fastify';
import { z } from 'zod';
import type { AccessPolicy } from '../../src/platform/access.js';
import { startApp, type TestContext } from './app.js';

export interface RegisteredRoute {
  method: string;
  url: string;
  access: AccessPolicy | undefined;
  /** Left out of the OpenAPI document on purpose (`schema.hide`). */
  hidden: boolean;
  /** Router constraints (the dashboard's page fallback matches page loads only). */
  constraints: Record<string, unknown> | undefined;
  /** Top-level keys of a zod object body schema, for generators that aim at real fields. */
  bodyKeys: string[];
}

export const MUTATING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Boots the real app with an onRoute listener installed before any module registers, so the list
 * is every route the app serves, not a hand-kept copy.
 */
export async function startAppWithRoutes(env: Record<string, string> = {}): Promise<{ ctx: TestContext; routes: RegisteredRoute[] }> {
  const routes: RegisteredRoute[] = [];
  const ctx = await startApp(env, {
    onRoute: (route: RouteOptions) => {
      const schema = route.schema as { hide?: boolean; body?: unknown } | undefined;
      const bodyKeys = schema?.body instanceof z.ZodObject ? Object.keys(schema.body.shape) : [];
      for (const method of [route.method].flat()) {
        routes.push({
          method,
          url: route.url,
          access: route.config?.access,
          hidden: Boolean(schema?.hide),
          constraints: route.constraints,
          bodyKeys,
        });
      }
    },
  });
  return { ctx, routes };
}

/** `/v1/projects/:id/archive` → `/v1/projects/{id}/archive` (OpenAPI path template). */
export const toOpenApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

export const pathParams = (url: string): string[] => [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
