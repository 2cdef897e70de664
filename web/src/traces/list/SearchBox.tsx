import { forwardRef, useState, type FormEvent } from 'react';

// The API's rule (a token is a run of letters or digits): a search without one would be refused.
const HAS_TOKEN = /[\p{L}\p{N}]/u;

/** Full-text search (q of GET /v1/traces), applied on Enter; an empty box clears it. */
export const SearchBox = forwardRef<HTMLInputElement, { value: string | undefined; onSearch: (q: string | undefined) => void }>(function SearchBox({ value, onSearch }, input) {
  const [text, setText] = useState(value ?? '');
  const [shownFor, setShownFor] = useState(value);
  const [problem, setProblem] = useState('');
  // Back/forward or a saved filter changed q: the box shows it.
  if (shownFor !== value) {
    setShownFor(value);
    setText(value ?? '');
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const q = text.trim();
    if (q !== '' && !HAS_TOKEN.test(q)) return setProblem('Search for at least one letter or digit.');
    setProblem('');
    onSearch(q === '' ? undefined : q);
  };
  return (
    <form role="search" className="trace-search" onSubmit={submit}>
      <label htmlFor="trace-search" className="visually-hidden">
        Search traces
      </label>
      <input
        id="trace-search"
        ref={input}
        type="search"
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder="Search names, inputs, outputs, errors…  ( / )"
        aria-keyshortcuts="/"
        aria-describedby={problem ? 'trace-search-problem' : undefined}
        maxLength={500}
      />
      <button type="submit">Search</button>
      {problem && (
        <span id="trace-search-problem" role="alert" className="chip-problem">
          {problem}
        </span>
      )}
    </form>
  );
}
);
