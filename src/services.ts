import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { apiKeyRepository } from './modules/apikeys/repo.js';
import { ApiKeyService } from './modules/apikeys/service.js';
import { projectRepository } from './modules/projects/repo.js';
import { ProjectService } from './modules/projects/service.js';
import { tenantRepository } from './modules/tenants/repo.js';
import { TenantService } from './modules/tenants/service.js';
import type { Authenticator } from './platform/auth.js';
import type { ClickHouseStore } from './stores/clickhouse.js';
import type { Sql } from './stores/pg.js';

export interface ServiceDeps {
  config: Config;
  sql: Sql;
  redis: Redis;
  ch: ClickHouseStore;
  authenticator: Authenticator;
}

/** The composition root: every service is built here once and handed to routes, jobs and the CLI. */
export function buildServices(deps: ServiceDeps) {
  const projectRepo = projectRepository(deps.sql);
  const projects = new ProjectService(projectRepo);
  const apiKeys = new ApiKeyService(apiKeyRepository(deps.sql), projects, deps.authenticator);
  const tenants = new TenantService(deps.sql, tenantRepository(deps.sql), projectRepo, apiKeys, deps.authenticator);
  return { projects, apiKeys, tenants };
}

export type Services = ReturnType<typeof buildServices>;
