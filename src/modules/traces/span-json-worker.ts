import { parentPort } from 'node:worker_threads';
import { writeSpansJson, type Share, type SpansKind } from './span-json.js';

/** A share of a trace's spans to write (span-json-threads.ts): the Native answer and the text's buffer, both shared memory. */
export interface SpansJob {
  native: SharedArrayBuffer;
  nativeOffset: number;
  nativeLength: number;
  kind: SpansKind;
  share: Share;
  storage: SharedArrayBuffer;
}

/** The share's text: its first `length` bytes of `storage` (the job's, or a larger one), or declined as spansJson declines. */
export type SpansReply = { storage: SharedArrayBuffer; length: number } | { declined: true };

parentPort?.on('message', (job: SpansJob) => {
  try {
    const written = writeSpansJson(Buffer.from(job.native, job.nativeOffset, job.nativeLength), job.kind, job.share, Buffer.from(job.storage));
    const reply: SpansReply = written ? { storage: written.text.buffer as SharedArrayBuffer, length: written.text.length } : { declined: true };
    parentPort!.postMessage(reply);
  } catch (err) {
    parentPort!.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
});
