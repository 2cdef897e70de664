import { parseOptions, printJson, required, UsageError, unknownSubcommand, uuidOption, wantsHelp } from './args.js';

export const CI_USAGE = `usage:
  looptrace ci gate --dataset DATASET_ID --eval-version EVAL_VERSION_ID --min-pass-rate 0.9
                    [--url http://localhost:8080] [--api-key KEY] [--timeout 1800] [--interval 2]
      Starts a CI gate on a Looptrace server (POST /v1/ci/runs): the dataset is scored by the eval
      version, and the gate passes when passed items / all items >= --min-pass-rate. Waits with a
      progress line on stderr, prints the gate as JSON on stdout, and exits 0 when it passed, 1 when
      it did not (or the server refused), 2 on bad arguments. Talks HTTP only: --url defaults to
      $LOOPTRACE_URL, else http://localhost:8080; --api-key to $LOOPTRACE_API_KEY.`;

interface CiRunView {
  id: string;
  status: string;
  item_count: number;
  completed_count: number;
  pass_rate: number | null;
  passed: boolean | null;
}

class ServerRefused extends Error {}

function rateOption(value: string | undefined): number {
  const v = Number(required(value, 'min-pass-rate', CI_USAGE));
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new UsageError(`--min-pass-rate must be a number from 0 to 1, got "${value}"`, CI_USAGE);
  return v;
}

function secondsOption(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const v = Number(value);
  if (!Number.isFinite(v) || v <= 0) throw new UsageError(`--${flag} must be a positive number of seconds, got "${value}"`, CI_USAGE);
  return v;
}

async function api(base: string, key: string, method: 'GET' | 'POST', path: string, body?: object): Promise<CiRunView> {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const answer = (await res.json().catch(() => ({}))) as CiRunView & { error?: string; code?: string };
  if (!res.ok) throw new ServerRefused(`${method} ${path}: ${res.status} ${answer.code ?? ''} ${answer.error ?? ''}`.trim());
  return answer;
}

/** `looptrace ci gate`: an HTTP client of the server, so it needs no stores of its own. */
export async function ciCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (wantsHelp(args)) {
    console.log(CI_USAGE);
    return 0;
  }
  if (sub !== 'gate') throw unknownSubcommand('ci', sub, CI_USAGE);
  const o = parseOptions(
    rest,
    {
      dataset: { type: 'string' },
      'eval-version': { type: 'string' },
      'min-pass-rate': { type: 'string' },
      url: { type: 'string' },
      'api-key': { type: 'string' },
      timeout: { type: 'string' },
      interval: { type: 'string' },
    },
    CI_USAGE,
  );
  const body = {
    dataset_id: uuidOption(o.dataset, 'dataset', CI_USAGE),
    eval_version_id: uuidOption(o['eval-version'], 'eval-version', CI_USAGE),
    min_pass_rate: rateOption(o['min-pass-rate']),
  };
  const base = o.url ?? process.env.LOOPTRACE_URL ?? 'http://localhost:8080';
  const key = required(o['api-key'] ?? process.env.LOOPTRACE_API_KEY, 'api-key (or LOOPTRACE_API_KEY)', CI_USAGE);
  const deadline = Date.now() + secondsOption(o.timeout, 'timeout', 1800) * 1000;
  const intervalMs = secondsOption(o.interval, 'interval', 2) * 1000;
  try {
    let run = await api(base, key, 'POST', '/v1/ci/runs', body);
    let shown = -1;
    while (run.passed === null) {
      if (run.completed_count !== shown) {
        process.stderr.write(`looptrace ci gate: ${run.status}, ${run.completed_count}/${run.item_count} items scored\n`);
        shown = run.completed_count;
      }
      if (Date.now() > deadline) {
        process.stderr.write(`looptrace ci gate: gave up waiting for run ${run.id} (--timeout)\n`);
        printJson(run);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
      run = await api(base, key, 'GET', `/v1/ci/runs/${run.id}`);
    }
    process.stderr.write(`looptrace ci gate: ${run.passed ? 'passed' : 'failed'}: pass rate ${run.pass_rate ?? 'n/a'} against ${body.min_pass_rate}\n`);
    printJson(run);
    return run.passed ? 0 : 1;
  } catch (err) {
    if (!(err instanceof ServerRefused) && !(err instanceof TypeError) && (err as Error).name !== 'TimeoutError') throw err;
    process.stderr.write(`looptrace ci gate: ${(err as Error).message}${err instanceof TypeError ? ` (is the server at ${base} running?)` : ''}\n`);
    return 1;
  }
}
