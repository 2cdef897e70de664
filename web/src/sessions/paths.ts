/** A session's page in the dashboard (its id may hold any character). */
export const sessionPath = (id: string) => `/sessions/${encodeURIComponent(id)}`;
