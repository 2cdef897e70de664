import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  OTLP_GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(4317),
  DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/looptrace'),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  REDIS_PREFIX: z.string().default('looptrace'),
  CLICKHOUSE_URL: optionalString,
  CLICKHOUSE_READ_URL: optionalString,
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).default('looptrace'),
  CLICKHOUSE_USER: optionalString,
  CLICKHOUSE_PASSWORD: optionalString,
  CLICKHOUSE_CLUSTER: optionalString,
  LOOPTRACE_DATA_DIR: z.string().default('./data'),
  LOOPTRACE_ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  LOOPTRACE_SECRET_KEY: optionalString,
  AUTH_JWT_SECRET: optionalString,
  AUTH_JWKS_URL: optionalString,
  AUTH_ISSUER: optionalString,
  AUTH_AUDIENCE: optionalString,
  AUTH_OIDC_ISSUER: optionalString,
  AUTH_OIDC_CLIENT_ID: optionalString,
  AUTH_OIDC_SCOPES: z.string().trim().min(1).default('openid profile email'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024),
  RESPONSE_DEADLINE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  AUDIT_ANCHOR_DIR: optionalString,
  AUDIT_ANCHOR_S3_BUCKET: optionalString,
  AUDIT_ANCHOR_S3_REGION: optionalString,
  AUDIT_ANCHOR_S3_ENDPOINT: optionalString,
  AUDIT_ANCHOR_RETENTION_DAYS: z.coerce.number().int().positive().default(3650),
  INGEST_FLUSH_MS: z.coerce.number().int().min(0).max(1000).default(5),
  INGEST_FLUSH_ROWS: z.coerce.number().int().positive().default(20_000),
  INGEST_WRITE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  LOOPTRACE_INSTANCE_ID: optionalString,
  LOOPTRACE_EXIT_WITH_PARENT: z.enum(['0', '1', 'true', 'false']).optional(),
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: optionalString,
  LOOPTRACE_EMBEDDING_MODEL: z.string().min(1).default('text-embedding-3-small'),
  LOOPTRACE_ALLOW_PRIVATE_PROVIDER_URLS: z.enum(['0', '1', 'true', 'false']).optional(),
  LOOPTRACE_PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  LOOPTRACE_PROVIDER_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
  LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK: z.enum(['0', '1', 'true', 'false']).optional(),
  LOOPTRACE_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(600_000).default(5_000),
  LOOPTRACE_RETENTION_INTERVAL_MS: z.coerce.number().int().min(1_000).max(7 * 86_400_000).default(3_600_000),
});

const flag = (value: string | undefined): boolean => value === '1' || value === 'true';

export type Config = {
  env: string;
  port: number;
  host: string;
  /** OTLP/gRPC trace receiver (TraceService/Export) on HOST; undefined = off (OTLP_GRPC_PORT=0). Served where the role serves HTTP. */
  otlpGrpcPort: number | undefined;
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  clickhouse: {
    url: string | undefined;
    /**
     * Where read queries go (the store's `rows` and `stream`), e.g. a load balancer over read
     * replicas; inserts, commands, migrations and the reads that must see the latest writes
     * (`rowsFromPrimary`) go to `url`. Server mode only; undefined = everything to `url`.
     */
    readUrl: string | undefined;
    database: string;
    user: string | undefined;
    password: string | undefined;
    cluster: string | undefined;
  };
  dataDir: string;
  role: 'api' | 'worker' | 'all';
  secretKey: Buffer;
  auth: {
    jwtSecret: string | undefined;
    jwksUrl: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
    /** The dashboard's sign-in (OpenID Connect, authorization code + PKCE); undefined = not configured. */
    oidc: { issuer: string; clientId: string; scopes: string } | undefined;
    /**
     * Whether the development sign-in (POST /auth/dev-session, GET /auth/dev-tenants) is served to
     * mint HS256 sessions: never in production, and only where such tokens are what the server
     * verifies (a secret, no JWKS). Where false, those routes are not registered at all.
     */
    devSessions: boolean;
  };
  /** NODE_ENV=production. */
  production: boolean;
  logLevel: string;
  bodyLimitBytes: number;
  /** A request not answered by then gets 503 + Retry-After (a store that stopped answering); 0 = off. */
  responseDeadlineMs: number;
  auditAnchor: {
    dir: string;
    s3: { bucket: string; region: string | undefined; endpoint: string | undefined } | undefined;
    retentionDays: number;
  };
  ingest: { flushMs: number; flushRows: number; writeTimeoutMs: number };
  /**
   * This process's stable name across restarts (host and port unless set): a process that starts
   * retires the earlier ones of its instance, whose pending trace writes are then settled at once.
   */
  instanceId: string;
  /** Shut down gracefully when the launching process dies (npm does not pass SIGTERM on to us). */
  exitWithParent: boolean;
  /**
   * The operator's LLM vendors (trusted URLs, loopback included) and the limits of every provider
   * call; tenants' own connections (llm-connections) go through the SSRF guard unless
   * `allowPrivateUrls`.
   */
  providers: {
    openai: { apiKey: string | undefined; baseUrl: string | undefined };
    anthropic: { apiKey: string | undefined; baseUrl: string | undefined };
    embeddingModel: string;
    allowPrivateUrls: boolean;
    timeoutMs: number;
    maxRetries: number;
  };
  /**
   * Webhook deliveries: `allowLoopback` lets receivers on loopback through the SSRF guard (tests,
   * local development); `retryBaseMs` is the first retry delay, doubling at each further one.
   */
  webhooks: { allowLoopback: boolean; retryBaseMs: number };
  /** Data retention: how often the `retention` job sweeps expired traces (per-project retention_days). */
  retention: { intervalMs: number };
};

/**
 * A secret that must survive restarts: taken from the environment, or created once under the data
 * directory so that a fresh checkout runs without hand-made secrets. Production sets it explicitly.
 */
function persistentSecret(dataDir: string, fileName: string, fromEnv: string | undefined): string {
  if (fromEnv) return fromEnv;
  const file = path.join(dataDir, fileName);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
  return secret;
}

function decodeSecretKey(value: string): Buffer {
  const asHex = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : undefined;
  const key = asHex ?? Buffer.from(value, 'base64url');
  if (key.length !== 32) throw new Error('LOOPTRACE_SECRET_KEY must be 32 bytes (64 hex chars or base64url)');
  return key;
}

/** CLICKHOUSE_READ_URL only next to a server: embedded ClickHouse is one in-process engine, with no replica to read from. */
function readUrlOf(url: string | undefined, readUrl: string | undefined): string | undefined {
  if (readUrl === undefined) return undefined;
  if (!url) {
    throw new Error(
      'CLICKHOUSE_READ_URL is set but CLICKHOUSE_URL is not: embedded ClickHouse (CLICKHOUSE_URL unset) has no replicas to read from. ' +
        'Set CLICKHOUSE_URL to the server that takes writes, or unset CLICKHOUSE_READ_URL',
    );
  }
  if (!URL.canParse(readUrl)) throw new Error('CLICKHOUSE_READ_URL must be a URL, e.g. http://clickhouse-read:8123');
  return readUrl;
}

function oidcSettings(issuer: string | undefined, clientId: string | undefined, scopes: string): Config['auth']['oidc'] {
  if (!issuer && !clientId) return undefined;
  if (!issuer || !clientId) throw new Error('AUTH_OIDC_ISSUER and AUTH_OIDC_CLIENT_ID are set together');
  if (!URL.canParse(issuer)) throw new Error('AUTH_OIDC_ISSUER must be a URL');
  return { issuer, clientId, scopes };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid environment: ${problems}`);
  }
  const e = parsed.data;
  // Before anything is written under the data directory: a refused setting changes nothing.
  const clickhouseReadUrl = readUrlOf(e.CLICKHOUSE_URL, e.CLICKHOUSE_READ_URL);
  const dataDir = path.resolve(e.LOOPTRACE_DATA_DIR);
  const production = e.NODE_ENV === 'production';
  if (production && !e.LOOPTRACE_SECRET_KEY) throw new Error('LOOPTRACE_SECRET_KEY is required in production');
  const jwtSecret =
    e.AUTH_JWT_SECRET ?? (!production && !e.AUTH_JWKS_URL ? persistentSecret(dataDir, 'dev-jwt.secret', undefined) : undefined);
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    otlpGrpcPort: e.OTLP_GRPC_PORT === 0 ? undefined : e.OTLP_GRPC_PORT,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    clickhouse: {
      url: e.CLICKHOUSE_URL,
      readUrl: clickhouseReadUrl,
      database: e.CLICKHOUSE_DATABASE,
      user: e.CLICKHOUSE_USER,
      password: e.CLICKHOUSE_PASSWORD,
      cluster: e.CLICKHOUSE_CLUSTER,
    },
    dataDir,
    role: e.LOOPTRACE_ROLE,
    secretKey: decodeSecretKey(persistentSecret(dataDir, 'secret.key', e.LOOPTRACE_SECRET_KEY)),
    auth: {
      jwtSecret,
      jwksUrl: e.AUTH_JWKS_URL,
      issuer: e.AUTH_ISSUER,
      audience: e.AUTH_AUDIENCE,
      oidc: oidcSettings(e.AUTH_OIDC_ISSUER, e.AUTH_OIDC_CLIENT_ID, e.AUTH_OIDC_SCOPES),
      devSessions: !production && !e.AUTH_JWKS_URL && jwtSecret !== undefined,
    },
    production,
    logLevel: e.LOG_LEVEL,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    responseDeadlineMs: e.RESPONSE_DEADLINE_MS,
    auditAnchor: {
      dir: path.resolve(e.AUDIT_ANCHOR_DIR ?? path.join(dataDir, 'audit-anchors')),
      s3: e.AUDIT_ANCHOR_S3_BUCKET
        ? { bucket: e.AUDIT_ANCHOR_S3_BUCKET, region: e.AUDIT_ANCHOR_S3_REGION, endpoint: e.AUDIT_ANCHOR_S3_ENDPOINT }
        : undefined,
      retentionDays: e.AUDIT_ANCHOR_RETENTION_DAYS,
    },
    ingest: { flushMs: e.INGEST_FLUSH_MS, flushRows: e.INGEST_FLUSH_ROWS, writeTimeoutMs: e.INGEST_WRITE_TIMEOUT_MS },
    instanceId: e.LOOPTRACE_INSTANCE_ID ?? `${hostname()}:${e.PORT}`,
    exitWithParent: flag(e.LOOPTRACE_EXIT_WITH_PARENT),
    providers: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      anthropic: { apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL },
      embeddingModel: e.LOOPTRACE_EMBEDDING_MODEL,
      allowPrivateUrls: flag(e.LOOPTRACE_ALLOW_PRIVATE_PROVIDER_URLS),
      timeoutMs: e.LOOPTRACE_PROVIDER_TIMEOUT_MS,
      maxRetries: e.LOOPTRACE_PROVIDER_MAX_RETRIES,
    },
    webhooks: { allowLoopback: flag(e.LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK), retryBaseMs: e.LOOPTRACE_WEBHOOK_RETRY_BASE_MS },
    retention: { intervalMs: e.LOOPTRACE_RETENTION_INTERVAL_MS },
  };
}
