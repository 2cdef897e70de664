import { useAction } from './useAction';
import { ErrorNotice } from './ErrorNotice';

const FORMATS = { csv: 'CSV', jsonl: 'JSONL', parquet: 'Parquet' } as const;
type ExportFormat = keyof typeof FORMATS;
const ALL_FORMATS = Object.keys(FORMATS) as ExportFormat[];

/**
 * Hands a file the page fetched to the browser as a download: the export endpoints need the
 * session token, so a plain link would not do.
 */
export function saveFile(file: Blob, name: string): void {
  const url = URL.createObjectURL(file);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A button per format (CSV, JSONL and Parquet unless `formats` says fewer) for one export; the one running says so, a failure is shown below them. */
export function ExportButtons<F extends ExportFormat = ExportFormat>({
  name,
  text,
  download,
  formats = ALL_FORMATS as F[],
}: {
  name: string;
  text: string;
  download: (format: F) => Promise<void>;
  formats?: readonly F[];
}) {
  const exporting = useAction();
  return (
    <div className="export" role="group" aria-label={name}>
      <span>{text}</span>
      {formats.map((format) => (
        <button key={format} type="button" onClick={() => void exporting.run(format, () => download(format))} disabled={exporting.busy !== null}>
          {exporting.busy === format ? 'Exporting…' : FORMATS[format]}
        </button>
      ))}
      {exporting.error !== undefined && <ErrorNotice error={exporting.error} />}
    </div>
  );
}
