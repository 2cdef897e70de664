/**
 * The fields of a span the tree is made of (a span of GET /v1/traces/{id}/tree has them); no
 * import, so the model is tested without the dashboard's API client.
 */
export interface TreeSpan {
  id: string;
  parent_span_id: string | null;
  start_time: string;
  end_time: string;
  name: string;
  type: string;
  model: string;
  error: string | null;
  failure_type: string | null;
}

/** A span in tree order (each parent before its children, siblings by start time). */
export interface SpanNode<S extends TreeSpan = TreeSpan> {
  span: S;
  depth: number;
  /** The index of its parent in the tree order, -1 for a root. */
  parent: number;
  /** The index after its last descendant: its subtree is [own index, end). */
  end: number;
  /** Its place among its siblings, from 1, and how many they are (aria-posinset, aria-setsize). */
  position: number;
  siblings: number;
  /** Where it sits on the trace's time line, in percent of the trace's duration. */
  offset: number;
  width: number;
}

export interface SpanForest<S extends TreeSpan = TreeSpan> {
  nodes: SpanNode<S>[];
  durationMs: number;
}

/** The spans as a tree in depth-first order. A span whose parent is not in the trace is a root. */
export function spanForest<S extends TreeSpan>(spans: S[]): SpanForest<S> {
  const ids = new Set(spans.map((s) => s.id));
  const starts = new Map(spans.map((s) => [s.id, Date.parse(s.start_time)]));
  const children = new Map<string | null, S[]>();
  let start = Infinity;
  let finish = -Infinity;
  for (const span of spans) {
    const parent = span.parent_span_id && ids.has(span.parent_span_id) ? span.parent_span_id : null;
    const list = children.get(parent);
    if (list) list.push(span);
    else children.set(parent, [span]);
    start = Math.min(start, starts.get(span.id)!);
    finish = Math.max(finish, Date.parse(span.end_time));
  }
  const durationMs = spans.length === 0 ? 0 : Math.max(finish - start, 0);
  const scale = (ms: number) => (durationMs === 0 ? 0 : (ms * 100) / durationMs);

  const nodes: SpanNode<S>[] = [];
  // Iterative: a chain of 10,000 nested spans would overflow a recursive walk.
  const stack: { span: S; depth: number; parent: number; position: number; siblings: number }[] = [];
  const push = (parentId: string | null, depth: number, parent: number) => {
    const list = (children.get(parentId) ?? []).sort((a, b) => starts.get(a.id)! - starts.get(b.id)!);
    for (let i = list.length - 1; i >= 0; i -= 1) stack.push({ span: list[i]!, depth, parent, position: i + 1, siblings: list.length });
  };
  const open: number[] = [];
  push(null, 0, -1);
  while (stack.length > 0) {
    const { span, depth, parent, position, siblings } = stack.pop()!;
    // Close the subtrees this node is not part of.
    while (open.length > depth) nodes[open.pop()!]!.end = nodes.length;
    const from = starts.get(span.id)! - start;
    const to = Date.parse(span.end_time) - start;
    open.push(nodes.length);
    nodes.push({ span, depth, parent, end: nodes.length + 1, position, siblings, offset: scale(from), width: Math.max(scale(to - from), 0.5) });
    push(span.id, depth + 1, nodes.length - 1);
  }
  while (open.length > 0) nodes[open.pop()!]!.end = nodes.length;
  return { nodes, durationMs };
}

/** Whether a span answers a search in the tree: its name, type, model, error or failure type holds the text. */
export function spanMatches(span: TreeSpan, query: string): boolean {
  const q = query.toLowerCase();
  return [span.name, span.type, span.model, span.error ?? '', span.failure_type ?? ''].some((field) => field.toLowerCase().includes(q));
}

/**
 * The indexes of the rows shown: without a search, every node whose ancestors are all expanded;
 * with one, the matching nodes and their ancestors (whatever is collapsed), so a match is never hidden.
 */
export function visibleRows(nodes: SpanNode<TreeSpan>[], collapsed: ReadonlySet<string>, query: string): number[] {
  const rows: number[] = [];
  if (query.trim() === '') {
    for (let i = 0; i < nodes.length; ) {
      rows.push(i);
      i = collapsed.has(nodes[i]!.span.id) ? nodes[i]!.end : i + 1;
    }
    return rows;
  }
  const shown = new Uint8Array(nodes.length);
  for (let i = 0; i < nodes.length; i += 1) {
    if (!spanMatches(nodes[i]!.span, query.trim())) continue;
    for (let j = i; j !== -1 && shown[j] === 0; j = nodes[j]!.parent) shown[j] = 1;
  }
  for (let i = 0; i < nodes.length; i += 1) if (shown[i]) rows.push(i);
  return rows;
}
