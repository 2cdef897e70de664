import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';

export type Project = Ok<'/v1/projects'>['projects'][number];

/** Every project of the tenant, archived ones included, for naming them and picking one (the API allows up to 1000 a page). */
export function useAllProjects(version = 0) {
  return useApi(`projects:all:${version}`, (signal) =>
    unwrap(api.GET('/v1/projects', { params: { query: { status: 'all', limit: 1000 } }, signal })).then((page) => page.projects),
  );
}
