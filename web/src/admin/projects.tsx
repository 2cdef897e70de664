import { api, unwrap, type Ok } from '../api/client';
import { useApi } from '../api/useApi';

export type Project = Ok<'/v1/projects'>['projects'][number];

/** Every project of the tenant, archived ones included, for naming them and picking one (the API allows up to 1000 a page). */
export function useAllProjects(version = 0) {
  return useApi(`projects:all:${version}`, (signal) =>
    unwrap(api.GET('/v1/projects', { params: { query: { status: 'all', limit: 1000 } }, signal })).then((page) => page.projects),
  );
}

/** The options of a project picker: the empty choice (every project, or "choose one"), then each project by name. */
export function ProjectOptions({ projects, empty }: { projects: readonly Pick<Project, 'id' | 'name'>[] | undefined; empty: string }) {
  return (
    <>
      <option value="">{empty}</option>
      {projects?.map((p) => (
        <option key={p.id} value={p.id}>
          {p.name}
        </option>
      ))}
    </>
  );
}
