import { Worker } from 'node:worker_threads';
import { SpareBuffer, sharedBuffer } from '../../stores/reused-buffer.js';
import { releasable, spansJson, textBytes, type Share, type SpansKind, type SpansText } from './span-json.js';
import type { SpansJob, SpansReply } from './span-json-worker.js';

/**
 * spansJson on two threads: this one writes the first half of the spans while a worker thread
 * writes the second, each into shared memory, and the answer is sent as the two texts. For a trace
 * of 10,000 spans the text is the largest part of the request: in-process about 56 ms on one
 * thread, 50 on two (each half alone takes 32, but the two slow each other down: the work moves
 * tens of megabytes and is bound by memory more than by the cores).
 *
 * One worker, one trace at a time: a trace that finds it busy, or an answer not in shared memory
 * (where only this thread can read it), or one too small to be worth the hand-over, is written
 * here alone. The worker reads the answer until it replies, so the answer is not released before.
 */
export async function spansJsonOnTwoThreads(native: Buffer, kind: SpansKind, fromBytes = TWO_THREADS_FROM_BYTES): Promise<SpansText[] | undefined> {
  const shared = native.buffer instanceof SharedArrayBuffer ? native.buffer : undefined;
  const worker = shared && native.length >= fromBytes ? helper.take() : undefined;
  if (!shared || !worker) return inOne(spansJson(native, kind));
  const storage = workerTextSpare.take(textBytes(native, SECOND_HALF));
  const job = { native: shared, nativeOffset: native.byteOffset, nativeLength: native.length, kind, share: SECOND_HALF, storage: storage.buffer as SharedArrayBuffer };
  const second: Promise<SpansText | undefined | 'failed'> = worker.write(job).then(
    (answer) => ('length' in answer ? releasable(Buffer.from(answer.storage, 0, answer.length), workerTextSpare) : given(storage, undefined)),
    () => given(storage, 'failed' as const),
  );
  let first: SpansText | undefined;
  try {
    first = spansJson(native, kind, FIRST_HALF);
  } catch (err) {
    const written = await second; // the worker reads the answer until it replies
    if (typeof written === 'object') written.release();
    throw err;
  }
  const written = await second;
  const rest = written === 'failed' ? spansJson(native, kind, SECOND_HALF) : written;
  if (first && rest) return nonEmpty([first, rest]);
  return releaseAll([first, rest]);
}

/** Gives back the texts' buffers (once the answer is sent, or when it is not). */
export function releaseAll(texts: readonly (SpansText | undefined)[] | undefined): undefined {
  for (const text of texts ?? []) text?.release();
  return undefined;
}

const FIRST_HALF: Share = { index: 0, of: 2 };
const SECOND_HALF: Share = { index: 1, of: 2 };

/** `storage` given back to the worker's spare, unused, and `value`. */
function given<T>(storage: Buffer, value: T): T {
  workerTextSpare.giveBack(storage);
  return value;
}

/** Answers from this many bytes up are written on two threads; the hand-over costs well under a millisecond. */
const TWO_THREADS_FROM_BYTES = 256 * 1024;

/** The worker's text of the last trace, given back for the next. */
const workerTextSpare = new SpareBuffer(sharedBuffer);

const inOne = (text: SpansText | undefined): SpansText[] | undefined => text && [text];

/** The texts that hold spans: a share may hold none, and texts are joined by commas. */
function nonEmpty(texts: SpansText[]): SpansText[] {
  const [empty, kept] = [texts.filter((t) => t.text.length === 0), texts.filter((t) => t.text.length > 0)];
  for (const text of empty) text.release();
  return kept;
}

/** The worker thread, started at its first trace and again after it failed. */
class HelperThread {
  private worker: Worker | undefined;
  private busy = false;

  /** The worker when it is idle, for one `write`. */
  take(): this | undefined {
    return this.busy ? undefined : this;
  }

  /** Has the worker write a share of a trace's spans; rejects when it could not (a worker that failed is started again). */
  write(job: SpansJob): Promise<SpansReply> {
    this.busy = true;
    const worker = (this.worker ??= startWorker());
    return new Promise<SpansReply>((resolve, reject) => {
      const settle = () => {
        worker.off('message', onMessage).off('error', onFailure).off('exit', onFailure);
        this.busy = false;
      };
      const onMessage = (reply: SpansReply | { error: string }) => {
        settle();
        if ('error' in reply) reject(new Error(`span text worker: ${reply.error}`));
        else resolve(reply);
      };
      const onFailure = (failure: unknown) => {
        settle();
        if (this.worker === worker) this.worker = undefined;
        void worker.terminate();
        reject(failure instanceof Error ? failure : new Error(`span text worker: exited with ${String(failure)}`));
      };
      worker.on('message', onMessage).on('error', onFailure).on('exit', onFailure);
      try {
        worker.postMessage(job);
      } catch (err) {
        settle();
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }
}

/**
 * Built, the worker is span-json-worker.js beside this file; from the TypeScript sources (tests,
 * `npm run dev`), the .ts file, loaded through tsx as this process loads it.
 */
function startWorker(): Worker {
  const fromSources = import.meta.url.endsWith('.ts');
  const worker = new Worker(new URL(fromSources ? './span-json-worker.ts' : './span-json-worker.js', import.meta.url), {
    execArgv: fromSources ? ['--import', 'tsx'] : [],
  });
  worker.unref(); // an idle worker does not keep the process alive
  return worker;
}

const helper = new HelperThread();
