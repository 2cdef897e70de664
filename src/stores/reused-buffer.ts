/** Bytes in a buffer that may be reused once `release` is called: read them before, never after. */
export interface ReleasableBytes {
  data: Buffer;
  release(): void;
}

/** Bytes in a buffer of their own: nothing to give back. */
export const ownBytes = (data: Buffer): ReleasableBytes => ({ data, release: () => {} });

const SPARE_MAX_BYTES = 64 * 1024 * 1024;

/**
 * One large buffer given back for the next request of its kind. Buffers of tens of megabytes
 * (a 10,000-span trace's Native answer and its JSON text), allocated per request, live outside the V8
 * heap but are counted by it: V8 ran a full garbage collection every request or every other.
 */
export class SpareBuffer {
  private buffer: Buffer | undefined;

  /** `allocate` makes a buffer when the spare is missing or too small. */
  constructor(private readonly allocate: (bytes: number) => Buffer = Buffer.allocUnsafe) {}

  take(bytes: number): Buffer {
    const reused = this.buffer && this.buffer.length >= bytes ? this.buffer : undefined;
    if (reused) this.buffer = undefined;
    return reused ?? this.allocate(bytes);
  }

  giveBack(buffer: Buffer): void {
    if (buffer.length <= SPARE_MAX_BYTES && (!this.buffer || this.buffer.length < buffer.length)) this.buffer = buffer;
  }
}
