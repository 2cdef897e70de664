import { useAction } from './useAction';
import { ErrorNotice } from './ErrorNotice';

const FORMATS = { csv: 'CSV', jsonl: 'JSONL', parquet: 'Parquet' } as const;
type ExportFormat = keyof typeof FORMATS;

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

/** CSV, JSONL and Parquet buttons for one export; the one running says so, a failure is shown below them. */
export function ExportButtons({ name, text, download }: { name: string; text: string; download: (format: ExportFormat) => Promise<void> }) {
  const exporting = useAction();
  return (
    <div className="export" role="group" aria-label={name}>
      <span>{text}</span>
      {(Object.keys(FORMATS) as ExportFormat[]).map((format) => (
        <button key={format} type="button" onClick={() => void exporting.run(format, () => download(format))} disabled={exporting.busy !== null}>
          {exporting.busy === format ? 'Exporting…' : FORMATS[format]}
        </button>
      ))}
      {exporting.error !== undefined && <ErrorNotice error={exporting.error} />}
    </div>
  );
}
