/**
 * The app logger as services see it: structured warnings about what they survive rather than
 * throw (a settlement that failed and will be retried, a webhook that could not be queued). The
 * server passes Fastify's pino logger; the CLI passes none and tests a stub.
 */
export interface AppLogger {
  warn(details: object, message: string): void;
}
