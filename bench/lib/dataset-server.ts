import { completeDataset, generate } from '../generate.js';
import { datasetDir, readDataset, type Dataset } from './dataset.js';
import { startServer, type RunningServer } from './looptrace.js';

/** The generated dataset at `scale` (generated now if missing) and a server on it. */
export async function datasetServer(
  scale: number,
  env: Record<string, string> = {},
): Promise<{ dataset: Dataset; server: RunningServer; get: (path: string) => Promise<Response> }> {
  let dataset = readDataset(scale);
  if (!dataset) {
    console.log(`no dataset of scale ${scale}: generating it`);
    dataset = await generate(scale);
  }
  if (dataset.registered === undefined) dataset = await completeDataset(dataset);
  const server = await startServer(datasetDir(scale), env);
  const headers = { authorization: `Bearer ${dataset.api_key}` };
  const get = (path: string) => fetch(`${server.url}${path}`, { headers });
  const probe = await get('/v1/traces?limit=1');
  if (probe.status === 401) {
    await server.stop();
    throw new Error('the dataset API key is unknown to the bench database: regenerate with npm run bench:generate');
  }
  return { dataset, server, get };
}
