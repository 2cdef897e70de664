import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BENCH_DATA } from './env.js';

/**
 * A generated dataset lives in its own data directory per scale (the bench server's while it is
 * used), described by dataset.json inside it, so datasets of several scales can be kept side by side.
 */
export const datasetDir = (scale: number): string => path.join(BENCH_DATA, `dataset-${scale}`);
const describedBy = (scale: number) => path.join(datasetDir(scale), 'dataset.json');

export interface Dataset {
  scale: number;
  traces: number;
  spans: number;
  tenant_id: string;
  project_id: string;
  api_key: string;
  window: { from: string; to: string };
  generated_at: string;
  /** Traces registered in the trace registry (Postgres); absent in datasets made before the generator did it. */
  registered?: number;
  clickhouse: string;
  timings_s: Record<string, number>;
  filter_selectivity: Record<string, number>;
}

export function readDataset(scale: number): Dataset | undefined {
  const file = describedBy(scale);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Dataset) : undefined;
}

export function writeDataset(d: Dataset): void {
  writeFileSync(describedBy(d.scale), JSON.stringify(d, null, 2) + '\n');
}
