import { statfsSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SpareBuffer, type ReleasableBytes } from './reused-buffer.js';

const answerSpare = new SpareBuffer();

/**
 * An answer that `write` has the embedded engine write to a file (SELECT … INTO OUTFILE), read
 * into a buffer that is reused from query to query. Answered directly, chDB copies every answer
 * into a new Buffer: 14 MB for a trace of 10,000 spans, and V8 ran a full garbage collection
 * (mark-compact, tens of milliseconds of marking on a server's heap) for nearly every such
 * Buffer. Through a file (in /dev/shm, memory, where it has room) no buffer is made per query.
 *
 * The file is in a directory made for it alone (mkdtemp: only this user may enter it), removed
 * with it once read or when writing failed; its name needs no escaping in a string literal and has
 * no extension that would make ClickHouse compress it. Throws when the file cannot be written or
 * read (the disk is full): the caller then reads the answer directly. `spare` gives the buffers
 * (one of the caller's own when it needs them made in a particular way).
 */
export async function answerThroughFile(write: (sqlStringLiteral: string) => Promise<unknown>, spare: SpareBuffer = answerSpare): Promise<ReleasableBytes> {
  const directory = await mkdtemp(path.join((answersBase ??= roomyShm() ? '/dev/shm' : tmpdir()), 'looptrace-answer-'));
  try {
    const file = path.join(directory, 'answer.bin');
    if (!SAFE_PATH.test(file)) throw new Error(`${file}: not a path to write into SQL`);
    await write(`'${file}'`);
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      const data = spare.take(size);
      for (let at = 0; at < size; ) {
        const { bytesRead } = await handle.read(data, at, size - at, at);
        if (bytesRead === 0) throw new Error(`${file}: shorter than its size`);
        at += bytesRead;
      }
      let released = false;
      return {
        data: data.subarray(0, size),
        release: () => {
          if (!released) spare.giveBack(data);
          released = true;
        },
      };
    } finally {
      await handle.close();
    }
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** Where answerThroughFile makes its directories, chosen once. */
let answersBase: string | undefined;
const SAFE_PATH = /^[A-Za-z0-9_./-]+$/;

/**
 * Whether /dev/shm (memory) has room to spare: a container's is often 64 MB, which PostgreSQL may
 * need too. Otherwise the files go to the temporary directory, where they live too briefly to
 * reach the disk in the usual case.
 */
function roomyShm(): boolean {
  try {
    const { bavail, bsize } = statfsSync('/dev/shm');
    return bavail * bsize >= SHM_ROOM_BYTES;
  } catch {
    return false;
  }
}
const SHM_ROOM_BYTES = 1024 * 1024 * 1024;
