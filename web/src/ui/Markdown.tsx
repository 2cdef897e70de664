import type { ReactNode } from 'react';

/**
 * Markdown as React elements, never as HTML: the text of a trace is the model's or the user's, so
 * any tag in it stays text, and only http(s) and mailto links become links. The common subset:
 * headings, paragraphs, lists, quotes, fenced code, inline code, bold, italic and links.
 */
export function Markdown({ text }: { text: string }) {
  return <div className="markdown">{blocks(text.replace(/\r\n?/g, '\n').split('\n'))}</div>;
}

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;

function blocks(lines: string[]): ReactNode[] {
  const out: ReactNode[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const key = out.length;
    const fence = FENCE.exec(line);
    if (fence) {
      const code: string[] = [];
      for (i += 1; i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!); i += 1) code.push(lines[i]!);
      i += 1;
      out.push(
        <pre key={key}>
          <code>{code.join('\n')}</code>
        </pre>,
      );
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const Tag = `h${Math.min(heading[1]!.length + 3, 6)}` as 'h4' | 'h5' | 'h6';
      out.push(<Tag key={key}>{inline(heading[2]!)}</Tag>);
      i += 1;
      continue;
    }
    const run = (pattern: RegExp) => {
      const items: string[] = [];
      for (; i < lines.length; i += 1) {
        const match = pattern.exec(lines[i]!);
        if (!match) break;
        items.push(match[1]!);
      }
      return items;
    };
    if (BULLET.test(line) || NUMBERED.test(line)) {
      const ordered = !BULLET.test(line);
      const items = run(ordered ? NUMBERED : BULLET).map((item, n) => <li key={n}>{inline(item)}</li>);
      out.push(ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>);
      continue;
    }
    if (QUOTE.test(line)) {
      out.push(<blockquote key={key}>{blocks(run(QUOTE))}</blockquote>);
      continue;
    }
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const paragraph: string[] = [];
    for (; i < lines.length && lines[i]!.trim() !== '' && !FENCE.test(lines[i]!) && !HEADING.test(lines[i]!) && !BULLET.test(lines[i]!) && !NUMBERED.test(lines[i]!) && !QUOTE.test(lines[i]!); i += 1) {
      paragraph.push(lines[i]!);
    }
    out.push(<p key={key}>{inline(paragraph.join('\n'))}</p>);
  }
  return out;
}

// Code first (nothing inside it is markup), then links, bold, italic.
const INLINE = /`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/g;

function inline(text: string): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    const [, code, label, href, bold1, bold2, em1, em2] = match;
    const key = out.length;
    if (code !== undefined) out.push(<code key={key}>{code}</code>);
    else if (label !== undefined) out.push(safeHref(href!) ? <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">{inline(label)}</a> : match[0]);
    else if (bold1 !== undefined || bold2 !== undefined) out.push(<strong key={key}>{inline(bold1 ?? bold2!)}</strong>);
    else out.push(<em key={key}>{inline(em1 ?? em2!)}</em>);
    last = match.index + match[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function safeHref(href: string): boolean {
  try {
    return ['http:', 'https:', 'mailto:'].includes(new URL(href).protocol);
  } catch {
    return false;
  }
}
