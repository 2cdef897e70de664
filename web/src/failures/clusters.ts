import type { Ok } from '../api/client';
import { FAILURE_TYPES } from '../traces/filters';

export type ClusterList = Ok<'/v1/failures/clusters'>;
export type Cluster = ClusterList['clusters'][number];

/** Cluster types the API names (docs of FailureCluster.type): the failure types, then the catch-alls. */
export const CLUSTER_TYPES: Record<string, string> = {
  ...FAILURE_TYPES,
  Unknown: 'Unknown (an error of no known type)',
  RuleMatch: 'Rule match (no error, a rule matched)',
  RemediationRegression: 'Remediation regression',
};

export const clusterTypeLabel = (type: string): string => CLUSTER_TYPES[type] ?? type;
