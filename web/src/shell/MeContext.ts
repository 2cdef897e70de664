import { createContext, useContext } from 'react';
import type { Me } from '../api/client';

export const MeContext = createContext<Me | null>(null);

/** The signed-in person and their tenant (GET /v1/me): inside the signed-in shell only. */
export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe outside the signed-in shell');
  return me;
}
