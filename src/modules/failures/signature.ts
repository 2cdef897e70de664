import { sha256Hex } from '../../platform/crypto.js';

/** Longest normalized text that feeds a signature: beyond it, two errors differ only in detail. */
const MAX_NORMALIZED_CHARS = 2_000;

// Applied in order: a later pattern must not see what an earlier one meant to keep whole (a
// timestamp's digits, a UUID's hex runs, an email's dots).
const PLACEHOLDERS: [RegExp, string][] = [
  [/([?&][^=\s&#]+=)[^&#\s]*/g, '$1<v>'],
  [/[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/g, '<email>'],
  // Quotes, but not an apostrophe inside a word ("can't ... don't" is no quoted value).
  [/"[^"\n]{0,500}"|(?<![a-z0-9])'[^'\n]{0,500}'(?![a-z0-9])|`[^`\n]{0,500}`/g, '<q>'],
  [/\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?/g, '<ts>'],
  [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>'],
  // Hex runs, long ids with a digit, and numbers share one placeholder: an id that happens to be
  // all digits must normalize like its siblings that are not.
  [/(?<![a-z0-9])(?:0x)?[0-9a-f]{8,}(?![a-z0-9])/g, '<n>'],
  [/(?<![a-z0-9])(?=[a-z]*\d)[a-z0-9]{16,}(?![a-z0-9])/g, '<n>'],
  [/\d+(?:\.\d+)?/g, '<n>'],
  [/\s+/g, ' '],
];

/**
 * The part of an error message that names the failure, not the occurrence: lowercase, with
 * numbers, UUIDs, hex runs (8+), long alphanumeric ids, quoted values, timestamps, emails and URL
 * query values replaced by placeholders. "Request 8812 timed out after 30s" and "Request 17 timed out after 5s" agree.
 */
export function normalizeError(error: string): string {
  let text = error.toLowerCase();
  for (const [pattern, placeholder] of PLACEHOLDERS) text = text.replace(pattern, placeholder);
  return text.trim().slice(0, MAX_NORMALIZED_CHARS);
}

/**
 * A cluster's identity: the same project, type and normalized error give the same signature in
 * every process and release (no salt, no process state), so a restart continues its clusters.
 */
export function signatureOf(projectId: string, type: string, normalized: string): string {
  return sha256Hex(`${projectId.toLowerCase()}\n${type}\n${normalized}`).slice(0, 32);
}
