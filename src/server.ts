import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { startWorkers } from './jobs/workers.js';
import { startOtlpGrpcServer, type OtlpGrpcServer } from './modules/ingest/otlp/grpc.js';
import { openStores } from './runtime.js';

/**
 * Process entry. LOOPTRACE_ROLE=api serves HTTP (and OTLP/gRPC), =worker runs queues, =all (default) both.
 * Embedded ClickHouse belongs to one process, so embedded mode must run as `all`.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.clickhouse.url && config.role !== 'all') {
    throw new Error('embedded ClickHouse (no CLICKHOUSE_URL) runs in one process: use LOOPTRACE_ROLE=all');
  }
  const stores = await openStores(config, { migrate: true });
  const app = await buildApp(stores);
  if (config.webhooks.allowLoopback) app.log.warn('LOOPTRACE_WEBHOOK_ALLOW_LOOPBACK=true: webhooks may target loopback addresses (tests and local development only)');
  const workers = config.role === 'api' ? undefined : await startWorkers(app.services, stores, app.log);

  let otlpGrpc: OtlpGrpcServer | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining OTLP/gRPC, then HTTP, then workers, then stores');
    const force = setTimeout(() => process.exit(1), 30_000).unref();
    try {
      // First, while the batcher still takes rows: its in-flight exports commit like HTTP requests.
      await otlpGrpc?.close(15_000);
      await app.close(); // stops accepting, waits for in-flight requests (and their group commits)
      await workers?.close();
      await stores.close();
      clearTimeout(force);
      app.log.info('shutdown complete');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  if (config.exitWithParent) {
    // Under `npm start`, a SIGTERM to npm kills its shell but not this process; noticing that our
    // parent is gone is the only way not to linger, holding the port and the embedded data directory.
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) void shutdown('parent exited');
    }, 1_000).unref();
  }

  if (config.role !== 'worker') {
    await app.listen({ port: config.port, host: config.host });
    if (config.otlpGrpcPort !== undefined) {
      const { authenticator, limiter } = app.accessControl;
      const started = await startOtlpGrpcServer({ services: app.services, config, log: app.log, authenticator, limiter, sql: stores.sql });
      // A signal that arrived while it was binding found nothing to drain.
      if (stopping) await started.close(0);
      else otlpGrpc = started;
    }
  } else {
    await app.ready();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
