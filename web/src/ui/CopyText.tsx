import { useState } from 'react';

/**
 * A value shown as code with a button that copies it; the outcome is announced (role=status).
 * `name` says what is copied, for the button's accessible name ("Copy the OTel trace id").
 */
export function CopyText({ text, name }: { text: string; name: string }) {
  return (
    <span className="copy-text">
      <code>{text}</code> <CopyButton text={text} name={name} />
    </span>
  );
}

/** A button that copies `text` (too long to show, or shown otherwise), announcing the outcome. */
export function CopyButton({ text, name }: { text: string; name: string }) {
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied.');
    } catch {
      setCopied('Could not copy: select it and copy it by hand.');
    }
  };
  return (
    <>
      <button type="button" className="copy-button" aria-label={`Copy the ${name}`} onClick={() => void copy()}>
        Copy
      </button>{' '}
      <span role="status" className="hint">
        {copied}
      </span>
    </>
  );
}
