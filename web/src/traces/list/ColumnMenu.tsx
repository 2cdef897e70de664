import { Dropdown } from '../../ui/Popover';
import { COLUMNS } from './columns';

/** Checkboxes choosing the columns of the trace table. */
export function ColumnMenu({ shown, onToggle }: { shown: string[]; onToggle: (id: string) => void }) {
  return (
    <Dropdown label="Columns shown" button="Columns" className="align-end">
      {() => (
        <fieldset className="column-menu">
          <legend>Columns shown</legend>
          {COLUMNS.map((column) => (
            <label key={column.id} className="check">
              <input type="checkbox" checked={shown.includes(column.id)} onChange={() => onToggle(column.id)} /> {column.label}
            </label>
          ))}
        </fieldset>
      )}
    </Dropdown>
  );
}
