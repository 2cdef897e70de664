import { describe, expect, it } from 'vitest';
import { clip, clipJson } from '../../src/cli/mcp/tool.js';

describe('clip', () => {
  it('keeps a text up to max characters whole and cuts a longer one, saying how much is left out', () => {
    expect(clip('abcdef', 6)).toBe('abcdef');
    expect(clip('abcdefgh', 6)).toBe('abcdef… [trimmed: 2 more characters]');
    expect(clip(null, 6)).toBeNull();
    expect(clip('abc', 0)).toBe('… [trimmed: 3 more characters]');
  });

  it('never cuts between the two halves of a surrogate pair', () => {
    const text = `abcde${'😀'}fgh`; // the emoji is the UTF-16 units 5 and 6
    expect(clip(text, 6)).toBe('abcde… [trimmed: 5 more characters]');
    expect(clip(text, 7)).toBe(`abcde😀… [trimmed: 3 more characters]`);
  });

  it('replaces metadata whose JSON is too long by its cut JSON text', () => {
    expect(clipJson({ a: 1 }, 100)).toEqual({ a: 1 });
    expect(clipJson({ note: 'x'.repeat(50) }, 10)).toBe('{"note":"x… [trimmed: 51 more characters]');
  });
});
