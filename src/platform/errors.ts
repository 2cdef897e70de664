/**
 * The one error type services throw. `code` is the stable machine-readable name from the spec;
 * `extra` fields are merged into the response body (e.g. `required_plan`).
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  /** Whether a client may retry the same request unchanged later. */
  get retryable(): boolean {
    return this.status === 429 || this.status === 503;
  }
}

export const notFound = (what: string) => new AppError(404, 'not_found', `${what} not found`);
export const conflict = (code: string, message: string) => new AppError(409, code, message);
export const badRequest = (code: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(400, code, message, extra);
export const unavailable = (message: string, retryAfterSeconds = 1) =>
  new AppError(503, 'service_unavailable', message, {}, { 'retry-after': String(retryAfterSeconds) });
