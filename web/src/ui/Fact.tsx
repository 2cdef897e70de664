import type { ReactNode } from 'react';

/** One term and its value in a detail page's `<dl className="facts">`. */
export function Fact({ term, value }: { term: string; value: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{value}</dd>
    </div>
  );
}
