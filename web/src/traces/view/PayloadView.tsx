import { useMemo, useState } from 'react';
import { CopyButton } from '../../ui/CopyText';
import { Markdown } from '../../ui/Markdown';
import { JsonValue } from '../../ui/Payload';
import { classify, type Message, type Part } from './messages';

/**
 * An input or output shown by what it is: chat messages as a conversation, JSON as a folding tree,
 * text as text, with markdown rendered on request; a copy button copies the text as recorded.
 */
export function PayloadView({ label, text }: { label: string; text: string }) {
  const shown = useMemo(() => classify(text), [text]);
  const [markdown, setMarkdown] = useState(false);
  const [raw, setRaw] = useState(false);
  const hasText = shown.kind === 'text' || shown.kind === 'chat';
  return (
    <section className="payload" aria-label={label}>
      <div className="payload-head">
        <h3>{label}</h3>
        {shown.kind !== 'empty' && (
          <span className="payload-tools">
            {shown.kind === 'chat' && (
              <button type="button" aria-pressed={raw} onClick={() => setRaw(!raw)}>
                JSON
              </button>
            )}
            {hasText && !raw && (
              <button type="button" aria-pressed={markdown} onClick={() => setMarkdown(!markdown)}>
                Markdown
              </button>
            )}
            <CopyButton text={text} name={label.toLowerCase()} />
          </span>
        )}
      </div>
      {shown.kind === 'empty' && <p className="muted">empty</p>}
      {shown.kind === 'text' && <Text text={shown.text} markdown={markdown} />}
      {shown.kind === 'json' && <JsonValue value={shown.value} depth={0} />}
      {shown.kind === 'chat' && (raw ? <JsonValue value={JSON.parse(text) as unknown} depth={0} /> : <Conversation messages={shown.messages} markdown={markdown} />)}
    </section>
  );
}

function Text({ text, markdown }: { text: string; markdown: boolean }) {
  return markdown ? <Markdown text={text} /> : <pre className="payload-text">{text}</pre>;
}

/** Chat messages in order, each under its role; tool calls and results set apart. */
export function Conversation({ messages, markdown }: { messages: Message[]; markdown: boolean }) {
  return (
    <ol className="conversation">
      {messages.map((message, i) => (
        <li key={i} className={`message message-${roleClass(message.role)}`}>
          <div className="message-role">
            {message.role}
            {message.name && <span className="muted"> · {message.name}</span>}
          </div>
          {message.parts.length === 0 && <p className="muted">no content</p>}
          {message.parts.map((part, j) => (
            <MessagePart key={j} part={part} markdown={markdown} />
          ))}
        </li>
      ))}
    </ol>
  );
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function', 'model']);
const roleClass = (role: string) => (ROLES.has(role) ? role : 'other');

function MessagePart({ part, markdown }: { part: Part; markdown: boolean }) {
  switch (part.kind) {
    case 'text':
      return <Text text={part.text} markdown={markdown} />;
    case 'tool_call':
      return (
        <div className="tool-call">
          <div className="tool-label">
            Tool call <code>{part.name || '(unnamed)'}</code>
            {part.id && <span className="muted"> · {part.id}</span>}
          </div>
          <pre>{part.arguments}</pre>
        </div>
      );
    case 'tool_result':
      return (
        <div className="tool-result">
          <div className="tool-label">
            Tool result{part.id && <span className="muted"> · {part.id}</span>}
          </div>
          <pre>{part.content}</pre>
        </div>
      );
    case 'other':
      return <JsonValue value={part.value} depth={0} />;
  }
}
