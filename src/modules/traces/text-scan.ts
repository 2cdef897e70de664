import { SpareBuffer } from '../../stores/reused-buffer.js';
import { TEXT_SCAN_WASM } from './text-scan-wasm.js';

/**
 * What bytes [from, to) of a buffer's memory hold, as span-json's scan answers (1: a byte to
 * escape, 2: a non-ASCII byte), sixteen bytes at a time (WebAssembly SIMD, text-scan.wat): about
 * a fifth of the detail's text was the JavaScript scan of inputs and outputs, four bytes at a time.
 * WebAssembly reads only its own memory, so the answers scanned this way are read into buffers
 * made there (scannableSpare).
 */
export type WideScan = (from: number, to: number) => number;

/** What is used here of the WebAssembly API, whose declarations TypeScript keeps in the DOM library this project does not load. */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (descriptor: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}
const { Module, Memory, Instance } = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;

const scanModule = new Module(TEXT_SCAN_WASM);
/** The scan over each memory scannableSpare made, by the memory's ArrayBuffer (fixed in size: it never changes). */
const scans = new WeakMap<ArrayBufferLike, WideScan>();
const WASM_PAGE = 65_536;

/** A buffer of `bytes` in a WebAssembly memory of its own, with a scan over it. */
function scannableBuffer(bytes: number): Buffer {
  const pages = Math.max(1, Math.ceil(bytes / WASM_PAGE));
  const memory = new Memory({ initial: pages, maximum: pages });
  const instance = new Instance(scanModule, { answer: { memory } });
  scans.set(memory.buffer, instance.exports.scan as WideScan);
  return Buffer.from(memory.buffer, 0, bytes);
}

/** Buffers for the answers span-json reads, each scannable by wideScanOf; reused as SpareBuffer says. */
export const scannableSpare = new SpareBuffer(scannableBuffer);

/** The scan of the memory `bytes` are in, when scannableSpare made it; its offsets are the memory's (add bytes.byteOffset). */
export const wideScanOf = (bytes: Buffer): WideScan | undefined => scans.get(bytes.buffer);
