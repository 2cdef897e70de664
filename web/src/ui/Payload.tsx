/** A trace's or span's input/output: JSON pretty-printed with its deeper levels folded, anything else as text. */
export function Payload({ label, text }: { label: string; text: string }) {
  const json = parseStructured(text);
  return (
    <section className="payload" aria-label={label}>
      <h3>{label}</h3>
      {text === '' ? <p className="muted">empty</p> : json === undefined ? <pre>{text}</pre> : <JsonValue value={json} depth={0} />}
    </section>
  );
}

/** Metadata objects, already parsed. */
export function JsonBlock({ label, value }: { label: string; value: Record<string, unknown> }) {
  return (
    <section className="payload" aria-label={label}>
      <h3>{label}</h3>
      {Object.keys(value).length === 0 ? <p className="muted">none</p> : <JsonValue value={value} depth={0} />}
    </section>
  );
}

/** Only objects and arrays are worth a tree; a bare JSON string or number reads best as text. */
function parseStructured(text: string): unknown {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

const OPEN_LEVELS = 2;

export function JsonValue({ value, depth, name }: { value: unknown; depth: number; name?: string }) {
  const key = name === undefined ? null : <span className="json-key">{name}: </span>;
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    const summary = Array.isArray(value) ? `[${entries.length} items]` : `{${entries.length} keys}`;
    if (entries.length === 0) return <span className="json-line">{key}{Array.isArray(value) ? '[]' : '{}'}</span>;
    return (
      <details className="json" open={depth < OPEN_LEVELS}>
        <summary>
          {key}
          <span className="muted">{summary}</span>
        </summary>
        <ul>
          {entries.map(([k, v]) => (
            <li key={k}>
              <JsonValue value={v} depth={depth + 1} name={k} />
            </li>
          ))}
        </ul>
      </details>
    );
  }
  return (
    <span className="json-line">
      {key}
      <span className={`json-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
    </span>
  );
}
