import { decodeCursor, toPage } from '../../platform/cursor.js';
import type { Role } from '../../platform/auth.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { toIso } from '../../platform/schemas.js';
import { z } from 'zod';
import type { TxSql } from '../../stores/pg.js';
import type { ProjectRepository, ProjectRow, ProjectStatusFilter } from './repo.js';
import type { Project, UpdateProject } from './schemas.js';

/** Who may change a project's retention_days (PATCH /v1/projects/{id} documents it as x-field-roles). */
export const RETENTION_ROLES: readonly Role[] = ['owner'];

export function toProject(row: ProjectRow): Project {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    status: row.archived_at ? 'archived' : 'active',
    archived_at: toIso(row.archived_at),
    prompt_autoship_enabled: row.prompt_autoship_enabled,
    retention_days: row.retention_days,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const projectCursor = z.object({ id: z.guid() });

export class ProjectService {
  constructor(private readonly repo: ProjectRepository) {}

  /** `tx`: inside the caller's transaction (a new tenant's first project, TenantService.create). */
  async create(tenantId: string, name: string, tx?: TxSql): Promise<Project> {
    return toProject(await this.repo.insert(tenantId, newId(), name, tx));
  }

  async get(tenantId: string, id: string): Promise<Project> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('project');
    return toProject(row);
  }

  async firstActive(tenantId: string): Promise<Project> {
    const row = await this.repo.firstActive(tenantId);
    if (!row) throw new AppError(409, 'no_active_project', 'the tenant has no active project');
    return toProject(row);
  }

  async list(tenantId: string, status: ProjectStatusFilter, limit: number, cursor: string | undefined) {
    const after = cursor ? decodeCursor(cursor, projectCursor).id : null;
    const rows = await this.repo.list(tenantId, status, after, limit + 1);
    const page = toPage(rows, limit, (last) => ({ id: last.id }));
    return { projects: page.items.map(toProject), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  /**
   * `role` is the caller's: changing retention_days needs an owner (RETENTION_ROLES), because a
   * shorter period destroys data at the next sweep (a member may still rename the project).
   */
  async update(tenantId: string, id: string, patch: UpdateProject, role: Role): Promise<Project> {
    if (patch.retention_days !== undefined && !RETENTION_ROLES.includes(role)) {
      throw new AppError(403, 'role_forbidden', `the ${role} role may not change retention_days: only an owner may`);
    }
    const row = await this.repo.update(tenantId, id, patch);
    if (!row) throw notFound('project');
    return toProject(row);
  }

  async archive(tenantId: string, id: string): Promise<Project> {
    const { row, lastActive } = await this.repo.archiveUnlessLast(tenantId, id);
    if (!row) throw notFound('project');
    if (lastActive) {
      throw new AppError(409, 'error.project.cannot_archive_last', 'the last active project of a tenant cannot be archived');
    }
    return toProject(row);
  }

  async unarchive(tenantId: string, id: string): Promise<Project> {
    const row = await this.repo.unarchive(tenantId, id);
    if (!row) throw notFound('project');
    return toProject(row);
  }

  /** Every project of every tenant with a retention period (the retention sweep). */
  async withRetention(): Promise<{ tenantId: string; projectId: string; retentionDays: number }[]> {
    const rows = await this.repo.withRetention();
    return rows.map((r) => ({ tenantId: r.tenant_id, projectId: r.id, retentionDays: r.retention_days }));
  }

  /** Every project of the tenant, archived ones included, by id. */
  async all(tenantId: string): Promise<Project[]> {
    return (await this.repo.all(tenantId)).map(toProject);
  }

  /**
   * The project an ingest request writes to: the one named in the body, else the key's default.
   * Refuses another tenant's project with 404, and with the spec's 403 an archived target project
   * or a key whose own project is archived ("ingest with a key of that project is refused").
   */
  async resolveForIngest(tenantId: string, requested: string | undefined, keyDefault: string | null): Promise<ProjectRow> {
    const id = requested ?? keyDefault;
    if (!id) throw new AppError(422, 'validation_error', 'project_id is required when ingesting with a session token', {
      details: [{ path: 'body.project_id', message: 'required' }],
    });
    const rows = await this.repo.findMany(tenantId, keyDefault && keyDefault !== id ? [id, keyDefault] : [id]);
    const target = rows.find((r) => r.id === id);
    if (!target) throw notFound('project');
    if (rows.some((r) => r.archived_at)) {
      throw new AppError(403, 'error.project.archived', 'the project is archived; ingest is suspended until it is unarchived');
    }
    return target;
  }
}
