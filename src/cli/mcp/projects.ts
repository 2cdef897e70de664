import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Project } from '../../modules/projects/schemas.js';
import type { LooptraceApi } from './api.js';
import { pageShape, registerReadTool } from './tool.js';

export function registerProjectTools(server: McpServer, api: LooptraceApi): void {
  registerReadTool(
    server,
    'list_projects',
    {
      title: 'List projects',
      description: 'The projects the API key can read (every project of its tenant), with id, name and status: the project_id values of the other tools.',
      inputSchema: { status: z.enum(['active', 'archived', 'all']).default('all').describe('default all'), ...pageShape },
    },
    async (query) => api.get<{ projects: Project[]; has_more: boolean; next_cursor: string | null }>('/v1/projects', query),
  );
}
