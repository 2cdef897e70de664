import { api, unwrap } from '../api/client';
import { useApi } from '../api/useApi';

/** The tenant's eval rules (first 1000), for naming them and picking one. */
export function useAllRules(version = 0) {
  return useApi(`eval-rules:all:${version}`, (signal) =>
    unwrap(api.GET('/v1/eval-rules', { params: { query: { limit: 1000 } }, signal })).then((page) => page.eval_rules),
  );
}
