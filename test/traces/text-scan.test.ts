import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TEXT_SCAN_WASM } from '../../src/modules/traces/text-scan-wasm.js';
import { scannableSpare, wideScanOf } from '../../src/modules/traces/text-scan.js';
import { compiledWat, GENERATED, generatedSource } from '../../scripts/wasm.js';

/** The WebAssembly scan of span text (text-scan.wat) against a byte-by-byte reading of the same bytes. */
const expected = (bytes: Uint8Array): number =>
  bytes.reduce((found, byte) => found | (byte >= 0x80 ? 2 : byte < 0x20 || byte === 0x22 || byte === 0x5c ? 1 : 0), 0);

describe('the WebAssembly scan', () => {
  it('is the compiled text-scan.wat (npm run build:wasm writes it)', async () => {
    const compiled = await compiledWat();
    expect(Buffer.from(compiled).equals(TEXT_SCAN_WASM)).toBe(true);
    expect(readFileSync(GENERATED, 'utf8')).toBe(generatedSource(compiled));
  });

  it('finds bytes to escape and non-ASCII bytes at any place, alignment and length', () => {
    const byte = fc.oneof(fc.constantFrom(0x20, 0x61, 0x7e), fc.constantFrom(0x00, 0x0a, 0x1f, 0x22, 0x5c, 0x7f, 0x80, 0xff), fc.integer({ min: 0, max: 255 }));
    // Plain text with one byte of interest (each test, in each lane of the sixteen-byte loop and in
    // the tail, alone), or with a few anywhere.
    const text = fc.oneof(
      fc.tuple(fc.nat(70), byte, fc.nat(70)).map(([before, b, after]) => [...Array<number>(before).fill(0x61), b, ...Array<number>(after).fill(0x61)]),
      fc.array(fc.oneof({ weight: 30, arbitrary: fc.constant(0x61) }, { weight: 1, arbitrary: byte }), { maxLength: 80 }),
    );
    fc.assert(
      fc.property(text, fc.nat(40), (values, offset) => {
        const bytes = Uint8Array.from(values);
        const buffer = scannableSpare.take(offset + bytes.length + 16);
        buffer.fill(0x22); // around the string: a scan that reads past its bounds finds a quote
        buffer.set(bytes, offset);
        const scan = wideScanOf(buffer)!;
        expect(scan(buffer.byteOffset + offset, buffer.byteOffset + offset + bytes.length)).toBe(expected(bytes));
        scannableSpare.giveBack(buffer);
      }),
      { numRuns: 3000 },
    );
  });

  it('is found only for buffers made in a WebAssembly memory', () => {
    expect(wideScanOf(Buffer.alloc(100))).toBeUndefined();
    const buffer = scannableSpare.take(100);
    expect(wideScanOf(buffer.subarray(10))).toBeDefined();
  });
});
