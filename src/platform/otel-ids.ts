/**
 * OTel ids ↔ Looptrace UUIDs (docs/ingest.md, "Span ids").
 *
 * - Trace: the 16 id bytes are the trace UUID, hex formatted 8-4-4-4-12.
 * - Span: the 8 id bytes are the last 8 bytes of the span UUID, the first 8 are zero:
 *   `00000000-0000-0000-xxxx-xxxxxxxxxxxx`. The rule does not involve the trace id, so a span's
 *   parent link needs nothing but the parent's own id, and an exporter's retry of a span lands on
 *   the same UUID (the spans table then collapses the two rows).
 * - Export of native spans goes the other way: the trace UUID's 32 hex digits, and the last 16
 *   hex digits of a span UUID (random in UUIDv4/v7), which gives back the OTel id for any span
 *   that came in through OTLP.
 */

const TRACE_HEX = /^[0-9a-f]{32}$/;
const SPAN_HEX = /^[0-9a-f]{16}$/;

/** A valid OTel trace id: 16 bytes, not all zero. */
export const isTraceHex = (hex: string | null): hex is string => hex !== null && TRACE_HEX.test(hex) && !/^0+$/.test(hex);

/** A valid OTel span id: 8 bytes, not all zero. */
export const isSpanHex = (hex: string | null): hex is string => hex !== null && SPAN_HEX.test(hex) && !/^0+$/.test(hex);

export const traceUuid = (hex: string): string =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;

export const spanUuid = (hex: string): string => `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4, 16)}`;

export const traceHexOf = (uuid: string): string => uuid.replaceAll('-', '').toLowerCase();

export const spanHexOf = (uuid: string): string => uuid.replaceAll('-', '').toLowerCase().slice(16);
