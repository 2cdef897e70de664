import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './app.js';
import { apiKeyRoutes } from './modules/apikeys/routes.js';
import { healthRoutes } from './modules/health/routes.js';
import { projectRoutes } from './modules/projects/routes.js';

/** Every module's routes, in one list so the route-policy test sees them all. */
export async function registerModuleRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  await app.register(healthRoutes(deps));
  await app.register(projectRoutes);
  await app.register(apiKeyRoutes);
}
