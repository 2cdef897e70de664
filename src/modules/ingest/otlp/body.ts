import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../../../platform/errors.js';
import { parseJsonBody } from '../../../platform/json-body.js';
import { decodeJsonRequest, decodeProtobufRequest, type OtlpResourceSpans } from './decode.js';

const gunzipAsync = promisify(gunzip);

export type OtlpEncoding = 'protobuf' | 'json';

/** A decoded OTLP request body and the encoding the response must use. */
export interface OtlpBody {
  encoding: OtlpEncoding;
  resourceSpans: OtlpResourceSpans[];
}

const tooLarge = () => new AppError(413, 'payload_too_large', 'request body exceeds the size limit once decompressed');

/** gzip (what OTLP exporters send) or none; the decompressed size is bounded like the raw one. */
async function decompress(request: FastifyRequest, body: Buffer, limit: number): Promise<Buffer> {
  const encoding = String(request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  if (encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw new AppError(415, 'unsupported_media_type', `content-encoding ${encoding} is not supported; use gzip or none`);
  }
  try {
    return await gunzipAsync(body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw new AppError(400, 'bad_request', 'body is not valid gzip');
  }
}

/**
 * OTLP/HTTP bodies for the routes of this plugin only (Fastify scopes parsers to the plugin):
 * application/x-protobuf and application/json, each optionally gzip-compressed. The raw body is
 * capped by Fastify's bodyLimit, the decompressed one by the same limit here.
 */
export function registerOtlpBodyParser(app: FastifyInstance, limit: number): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(['application/x-protobuf', 'application/json'], { parseAs: 'buffer' }, async (request: FastifyRequest, raw: Buffer | string) => {
    const body = await decompress(request, Buffer.isBuffer(raw) ? raw : Buffer.from(raw), limit);
    const protobuf = (request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-protobuf');
    if (protobuf) return { encoding: 'protobuf', resourceSpans: decodeProtobufRequest(body) } satisfies OtlpBody;
    return { encoding: 'json', resourceSpans: decodeJsonRequest(parseJsonBody(body.toString('utf8'))) } satisfies OtlpBody;
  });
}
