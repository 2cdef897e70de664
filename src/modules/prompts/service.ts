import { z } from 'zod';
import { decodeCursor, toPage } from '../../platform/cursor.js';
import { AppError, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { ProjectService } from '../projects/service.js';
import type { ActiveRow, PromptRepository, VersionRow } from './repo.js';
import type { CreatePrompt, CreateVersion, Prompt, PromptVersion } from './schemas.js';

// The module's secondary services and helpers that other modules use: this file is its public face.
export type { PromptDeploymentService } from './deployment-service.js';

const listCursor = z.object({ id: z.guid(), p: z.string() });

export const toVersion = (v: VersionRow): PromptVersion => ({
  id: v.id,
  version: v.version,
  content: v.content,
  created_by: v.created_by,
  created_at: v.created_at.toISOString(),
});

export const toPrompt = (row: ActiveRow): Prompt => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  active_version: toVersion(row.active),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

/** The prompt registry: named, versioned prompts per project, one version active at a time. */
export class PromptService {
  constructor(
    readonly repo: PromptRepository,
    private readonly projects: Pick<ProjectService, 'get'>,
  ) {}

  async create(tenantId: string, body: CreatePrompt, by: string): Promise<Prompt> {
    await this.projects.get(tenantId, body.project_id);
    const row = await this.repo.create(tenantId, { id: newId(), project_id: body.project_id, name: body.name }, { id: newId(), content: body.content, created_by: by });
    if (!row) throw new AppError(409, 'prompt.exists', `the project already has a prompt named ${body.name}`);
    return toPrompt(row);
  }

  async addVersion(tenantId: string, name: string, body: CreateVersion, by: string): Promise<Prompt> {
    const prompt = await this.find(tenantId, body.project_id, name);
    await this.repo.begin(async (tx) => {
      const version = await this.repo.addVersion(tx, tenantId, prompt.id, { id: newId(), content: body.content, created_by: by });
      if (body.activate ?? true) await this.repo.activate(tx, tenantId, prompt.id, version.id, null, by, newId());
    });
    return toPrompt((await this.repo.findById(tenantId, prompt.id))!);
  }

  async list(tenantId: string, query: { limit: number; cursor?: string | undefined; project_id?: string | undefined }) {
    const scope = query.project_id ?? '*';
    const after = query.cursor ? decodeCursor(query.cursor, listCursor.extend({ p: z.literal(scope) })) : null;
    const rows = await this.repo.list(tenantId, query.project_id, after?.id ?? null, query.limit);
    const page = toPage(rows, query.limit, (last) => ({ id: last.id, p: scope }));
    return { prompts: page.items.map(toPrompt), has_more: page.has_more, next_cursor: page.next_cursor };
  }

  async detail(tenantId: string, projectId: string, name: string) {
    const prompt = await this.find(tenantId, projectId, name);
    return { ...toPrompt(prompt), versions: (await this.repo.versions(prompt.id)).map(toVersion) };
  }

  /** What SDKs fetch: the active version's content. */
  async active(tenantId: string, projectId: string, name: string) {
    const prompt = await this.find(tenantId, projectId, name);
    return { project_id: projectId, name: prompt.name, version: prompt.active.version, version_id: prompt.active.id, content: prompt.active.content };
  }

  /** 404 for an unknown project as for an unknown name: neither exists in the caller's tenant. */
  async find(tenantId: string, projectId: string, name: string): Promise<ActiveRow> {
    const row = await this.repo.find(tenantId, projectId, name);
    if (!row) throw notFound('prompt');
    return row;
  }
}
