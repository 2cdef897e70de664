import { describe, expect, it } from 'vitest';
import { spanForest, visibleRows, type TreeSpan } from '../../web/src/traces/spanTree.js';
import { classify } from '../../web/src/traces/view/messages.js';

/** The dashboard's trace view model, without a browser: the span tree and what a payload is shown as. */
const t0 = Date.parse('2026-11-01T12:00:00.000Z');
function span(id: string, parent: string | null, startMs: number, endMs: number, name = id): TreeSpan {
  return {
    id,
    parent_span_id: parent,
    name,
    type: 'llm',
    model: '',
    error: null,
    failure_type: null,
    start_time: new Date(t0 + startMs).toISOString(),
    end_time: new Date(t0 + endMs).toISOString(),
  };
}

describe('spanForest', () => {
  it('orders parents before children and siblings by start time, with subtree ends, sibling places and timeline offsets', () => {
    const { nodes, durationMs } = spanForest([span('c2', 'root', 500, 1_000), span('root', null, 0, 1_000), span('c1', 'root', 100, 400), span('g', 'c1', 200, 300)]);
    expect(durationMs).toBe(1_000);
    expect(nodes.map((n) => [n.span.id, n.depth, n.parent, n.end, n.position, n.siblings])).toEqual([
      ['root', 0, -1, 4, 1, 1],
      ['c1', 1, 0, 3, 1, 2],
      ['g', 2, 1, 3, 1, 1],
      ['c2', 1, 0, 4, 2, 2],
    ]);
    expect(nodes.map((n) => [n.offset, n.width])).toEqual([
      [0, 100],
      [10, 30],
      [20, 10],
      [50, 50],
    ]);
  });

  it('shows a span whose parent is not in the trace as a root', () => {
    expect(spanForest([span('a', 'missing', 0, 10), span('b', null, 5, 10)]).nodes.map((n) => [n.span.id, n.depth])).toEqual([
      ['a', 0],
      ['b', 0],
    ]);
  });

  it('walks a chain of 10,000 nested spans without overflowing the stack', () => {
    const chain = Array.from({ length: 10_000 }, (_, i) => span(`s${i}`, i === 0 ? null : `s${i - 1}`, i, 20_000));
    const { nodes } = spanForest(chain);
    expect(nodes.at(-1)!.depth).toBe(9_999);
    expect(nodes.every((n) => n.end === 10_000)).toBe(true);
  });
});

describe('visibleRows', () => {
  const { nodes } = spanForest([span('root', null, 0, 1_000), span('c1', 'root', 100, 400), span('g', 'c1', 200, 300, 'needle'), span('c2', 'root', 500, 1_000)]);
  const ids = (rows: number[]) => rows.map((i) => nodes[i]!.span.id);

  it('skips the descendants of a collapsed span', () => {
    expect(ids(visibleRows(nodes, new Set(), ''))).toEqual(['root', 'c1', 'g', 'c2']);
    expect(ids(visibleRows(nodes, new Set(['c1']), ''))).toEqual(['root', 'c1', 'c2']);
    expect(ids(visibleRows(nodes, new Set(['root']), ''))).toEqual(['root']);
  });

  it('shows the matches of a search and their ancestors, whatever is collapsed', () => {
    expect(ids(visibleRows(nodes, new Set(['root']), 'NEEDLE'))).toEqual(['root', 'c1', 'g']);
    expect(visibleRows(nodes, new Set(), 'nothing like it')).toEqual([]);
  });
});

describe('classify', () => {
  it('tells empty, text, JSON and chat apart', () => {
    expect(classify('  ')).toEqual({ kind: 'empty' });
    expect(classify('Paris.')).toEqual({ kind: 'text', text: 'Paris.' });
    expect(classify('"a JSON string"').kind).toBe('text');
    expect(classify('{"a": [1, 2]}')).toEqual({ kind: 'json', value: { a: [1, 2] } });
    expect(classify('[{"role": 1}]').kind).toBe('json');
    expect(classify('{not json').kind).toBe('text');
  });

  it('reads an OpenAI request with a tool call and its result', () => {
    const shown = classify(
      JSON.stringify({
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        ],
      }),
    );
    expect(shown).toEqual({
      kind: 'chat',
      messages: [
        { role: 'user', name: null, parts: [{ kind: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', name: null, parts: [{ kind: 'tool_call', name: 'weather', id: 'call_1', arguments: '{\n  "city": "Paris"\n}' }] },
        { role: 'tool', name: null, parts: [{ kind: 'tool_result', id: 'call_1', content: 'sunny' }] },
      ],
    });
  });

  it('reads an OpenAI response, an Anthropic request with its system prompt and tool result blocks', () => {
    expect(classify(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'Hi' } }] }))).toEqual({
      kind: 'chat',
      messages: [{ role: 'assistant', name: null, parts: [{ kind: 'text', text: 'Hi' }] }],
    });
    const anthropic = classify(
      JSON.stringify({
        system: [{ type: 'text', text: 'Be brief.' }],
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 'tu_1', name: 'search', input: { q: 'x' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'found' }] }, { type: 'image', source: {} }] },
        ],
      }),
    );
    expect(anthropic).toEqual({
      kind: 'chat',
      messages: [
        { role: 'system', name: null, parts: [{ kind: 'text', text: 'Be brief.' }] },
        { role: 'assistant', name: null, parts: [{ kind: 'tool_call', name: 'search', id: 'tu_1', arguments: '{\n  "q": "x"\n}' }] },
        {
          role: 'user',
          name: null,
          parts: [
            { kind: 'tool_result', id: 'tu_1', content: 'found' },
            { kind: 'other', value: { type: 'image', source: {} } },
          ],
        },
      ],
    });
  });

  it('reads OTel GenAI messages (parts with text, tool calls and tool call responses) and an OpenAI Responses request', () => {
    const otel = classify(
      JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: 'Weather?' }] },
        { role: 'assistant', parts: [{ type: 'tool_call', id: 'c1', name: 'weather', arguments: { city: 'Paris' } }] },
        { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', response: 'sunny' }] },
      ]),
    );
    expect(otel).toEqual({
      kind: 'chat',
      messages: [
        { role: 'user', name: null, parts: [{ kind: 'text', text: 'Weather?' }] },
        { role: 'assistant', name: null, parts: [{ kind: 'tool_call', name: 'weather', id: 'c1', arguments: '{\n  "city": "Paris"\n}' }] },
        { role: 'tool', name: null, parts: [{ kind: 'tool_result', id: 'c1', content: 'sunny' }] },
      ],
    });
    expect(classify(JSON.stringify({ instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }] }))).toEqual({
      kind: 'chat',
      messages: [
        { role: 'system', name: null, parts: [{ kind: 'text', text: 'Be brief.' }] },
        { role: 'user', name: null, parts: [{ kind: 'text', text: 'Hi' }] },
      ],
    });
  });
});
