import type { ReactNode } from 'react';
import { ListState, LoadMore } from './lists';
import { RowActions, type RowDelete } from './RowActions';

/** A column header: its text, and a class for numeric columns. */
export type Column = string | { label: string; className: string };

/** What a row's Actions cell does: RowActions' props but the deleter, which is the table's. */
type RowActionProps = Omit<Parameters<typeof RowActions>[0], 'deleter' | 'id'>;

/**
 * A paged list (`usePages`) as a table whose rows end in an Actions cell (edit, other buttons,
 * delete behind a confirmation): the delete's reason and refusal above it (or `notices`), its
 * loading and empty states, the table, and "Load more". `cells` gives each row's cells but Actions.
 */
export function EditableTable<T extends { id: string }>({
  list,
  loading,
  empty,
  caption,
  className = 'list',
  columns,
  cells,
  actions,
  deleter,
  notices,
}: {
  list: { items: T[]; loading: boolean; error: unknown; hasMore: boolean; loadingMore: boolean; loadMore: () => Promise<void> };
  loading: string;
  empty: ReactNode;
  /** For screen readers: what the table lists. */
  caption: string;
  className?: string;
  columns: readonly Column[];
  cells: (item: T) => ReactNode;
  actions: (item: T) => RowActionProps;
  deleter: RowDelete;
  /** Above the list instead of the delete's reason and refusal (a page with more row actions says theirs too). */
  notices?: ReactNode;
}) {
  return (
    <>
      {notices ?? (
        <>
          {deleter.reason}
          {deleter.error}
        </>
      )}
      <ListState list={list} loading={loading} empty={empty} />
      {list.items.length > 0 && (
        <table className={className}>
          <caption className="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) =>
                typeof column === 'string' ? (
                  <th key={column} scope="col">
                    {column}
                  </th>
                ) : (
                  <th key={column.label} scope="col" className={column.className}>
                    {column.label}
                  </th>
                ),
              )}
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((item) => (
              <tr key={item.id}>
                {cells(item)}
                <td>
                  <RowActions id={item.id} deleter={deleter} {...actions(item)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <LoadMore list={list} />
    </>
  );
}
