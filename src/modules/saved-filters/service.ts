import { z } from 'zod';
import type { AuthContext, Role } from '../../platform/auth.js';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { ProjectService } from '../projects/service.js';
import type { SavedFilterRepository, SavedFilterRow } from './repo.js';
import type { CreateSavedFilter, ListSavedFiltersQuery, SavedFilter, UpdateSavedFilter } from './schemas.js';

const listCursor = z.object({ id: z.guid(), p: z.string() });

const toSavedFilter = (row: SavedFilterRow): SavedFilter => ({
  ...row,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

/** Who may change or delete a saved filter: its author (created_by) or an owner. PATCH and DELETE document it as x-author-only. */
export const AUTHOR_ONLY: { field: 'created_by'; orRoles: readonly Role[] } = { field: 'created_by', orRoles: ['owner'] };

/** Saved filters are the tenant's: every member sees all of them; their author or an owner changes them (AUTHOR_ONLY). */
export class SavedFilterService {
  constructor(
    private readonly repo: SavedFilterRepository,
    private readonly projects: Pick<ProjectService, 'get'>,
  ) {}

  async create(auth: AuthContext, body: CreateSavedFilter): Promise<SavedFilter> {
    await this.projects.get(auth.tenantId, body.project_id);
    const row = await this.repo.insert({ id: newId(), tenant_id: auth.tenantId, created_by: authorOf(auth), ...body });
    return toSavedFilter(row);
  }

  async list(tenantId: string, query: ListSavedFiltersQuery) {
    const scope = query.project_id ?? '';
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ p: z.literal(scope) })).id : null;
    const page = toPage(await this.repo.list(tenantId, query.project_id, after, query.limit), query.limit, (last) => ({ id: last.id, p: scope }));
    return { items: page.items.map(toSavedFilter), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async get(tenantId: string, id: string): Promise<SavedFilter> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw notFound('saved filter');
    return toSavedFilter(row);
  }

  async update(auth: AuthContext, id: string, patch: UpdateSavedFilter): Promise<SavedFilter> {
    await this.authorize(auth, id);
    const row = await this.repo.update(auth.tenantId, id, patch);
    if (!row) throw notFound('saved filter');
    return toSavedFilter(row);
  }

  async remove(auth: AuthContext, id: string): Promise<void> {
    await this.authorize(auth, id);
    await this.repo.remove(auth.tenantId, id);
  }

  private async authorize(auth: AuthContext, id: string): Promise<void> {
    const row = await this.repo.find(auth.tenantId, id);
    if (!row) throw notFound('saved filter');
    if (!AUTHOR_ONLY.orRoles.includes(auth.role) && row[AUTHOR_ONLY.field] !== authorOf(auth)) {
      throw new AppError(403, 'role_forbidden', 'only the author of a saved filter or an owner may change or delete it');
    }
  }
}

/** Saved filters are dashboard-only: the caller is always a signed-in user. */
const authorOf = (auth: AuthContext): string => auth.userId ?? '';
