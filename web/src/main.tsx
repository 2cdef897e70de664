import { lazy, StrictMode, type ComponentType } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { OidcCallbackPage } from './auth/OidcCallbackPage';
import { SignInPage } from './auth/SignInPage';
import { NotFoundPage } from './shell/NotFoundPage';
import { SignedIn } from './shell/SignedIn';
import { TracesPage } from './traces/TracesPage';
import { prefetchTree } from './traces/view/api';
import './styles.css';

/**
 * The trace list (where the dashboard opens) and sign-in come with the initial JS; every
 * other page is a chunk fetched when first opened (Layout's Suspense shows that it is loading), so
 * the first page does not wait for code it does not use: the charts (uPlot), the admin forms…
 */
function page<Name extends string>(load: () => Promise<Record<Name, ComponentType>>, name: Name) {
  return lazy(() => load().then((module) => ({ default: module[name] })));
}
const loadTraceDetail = () => import('./traces/TraceDetailPage');
// Opened at a trace's address, the trace view's code and the trace's tree are fetched alongside GET /v1/me, not after it.
const openedTrace = /^\/traces\/([^/]+)$/.exec(window.location.pathname);
if (openedTrace) {
  void loadTraceDetail();
  prefetchTree(decodeURIComponent(openedTrace[1]!));
}
const TraceDetailPage = page(loadTraceDetail, 'TraceDetailPage');
const ApiKeysPage = page(() => import('./admin/ApiKeysPage'), 'ApiKeysPage');
const AuditLogPage = page(() => import('./admin/AuditLogPage'), 'AuditLogPage');
const LlmConnectionsPage = page(() => import('./admin/LlmConnectionsPage'), 'LlmConnectionsPage');
const BillingPage = page(() => import('./admin/BillingPage'), 'BillingPage');
const MembersPage = page(() => import('./admin/MembersPage'), 'MembersPage');
const ProjectsPage = page(() => import('./admin/ProjectsPage'), 'ProjectsPage');
const WebhooksPage = page(() => import('./admin/WebhooksPage'), 'WebhooksPage');
const ActionDetailPage = page(() => import('./control/ActionDetailPage'), 'ActionDetailPage');
const ActionsPage = page(() => import('./control/ActionsPage'), 'ActionsPage');
const DeploymentDetailPage = page(() => import('./control/DeploymentDetailPage'), 'DeploymentDetailPage');
const DeploymentsPage = page(() => import('./control/DeploymentsPage'), 'DeploymentsPage');
const ModelRoutesPage = page(() => import('./control/PoliciesPage'), 'ModelRoutesPage');
const PoliciesPage = page(() => import('./control/PoliciesPage'), 'PoliciesPage');
const ClusterDetailPage = page(() => import('./failures/ClusterDetailPage'), 'ClusterDetailPage');
const FailureRulesPage = page(() => import('./failures/FailureRulesPage'), 'FailureRulesPage');
const FailuresPage = page(() => import('./failures/FailuresPage'), 'FailuresPage');
const SessionDetailPage = page(() => import('./sessions/SessionDetailPage'), 'SessionDetailPage');
const SessionsPage = page(() => import('./sessions/SessionsPage'), 'SessionsPage');
const ComparePage = page(() => import('./evals/ComparePage'), 'ComparePage');
const DatasetPage = page(() => import('./evals/DatasetPage'), 'DatasetPage');
const DatasetsPage = page(() => import('./evals/DatasetsPage'), 'DatasetsPage');
const EvalRulesPage = page(() => import('./evals/EvalRulesPage'), 'EvalRulesPage');
const EvaluationsPage = page(() => import('./evals/EvaluationsPage'), 'EvaluationsPage');
const RunPage = page(() => import('./evals/RunPage'), 'RunPage');
const SqlPage = page(() => import('./sql/SqlPage'), 'SqlPage');
const MetricsPage = lazy(() => import('./metrics/MetricsPage'));

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <BrowserRouter>
      <Routes>
        <Route path="/sign-in" element={<SignInPage />} />
        <Route path="/auth/callback" element={<OidcCallbackPage />} />
        <Route element={<SignedIn />}>
          <Route index element={<Navigate to="/traces" replace />} />
          <Route path="traces" element={<TracesPage />} />
          <Route path="traces/:id" element={<TraceDetailPage />} />
          <Route path="sessions" element={<SessionsPage />} />
          <Route path="sessions/:id" element={<SessionDetailPage />} />
          <Route path="control" element={<Navigate to="/control/actions" replace />} />
          <Route path="control/actions" element={<ActionsPage />} />
          <Route path="control/actions/:id" element={<ActionDetailPage />} />
          <Route path="control/policies" element={<PoliciesPage />} />
          <Route path="control/model-routes" element={<ModelRoutesPage />} />
          <Route path="prompt-deployments" element={<DeploymentsPage />} />
          <Route path="prompt-deployments/:id" element={<DeploymentDetailPage />} />
          <Route path="evals" element={<Navigate to="/evals/rules" replace />} />
          <Route path="evals/rules" element={<EvalRulesPage />} />
          <Route path="evals/results" element={<EvaluationsPage />} />
          <Route path="evals/compare" element={<ComparePage />} />
          <Route path="datasets" element={<DatasetsPage />} />
          <Route path="datasets/:id" element={<DatasetPage />} />
          <Route path="datasets/:id/runs/:runId" element={<RunPage />} />
          <Route path="admin" element={<Navigate to="/admin/projects" replace />} />
          <Route path="admin/projects" element={<ProjectsPage />} />
          <Route path="admin/api-keys" element={<ApiKeysPage />} />
          <Route path="admin/members" element={<MembersPage />} />
          <Route path="admin/billing" element={<BillingPage />} />
          <Route path="admin/audit-log" element={<AuditLogPage />} />
          <Route path="admin/webhooks" element={<WebhooksPage />} />
          <Route path="admin/llm-connections" element={<LlmConnectionsPage />} />
          <Route path="failures" element={<FailuresPage />} />
          <Route path="failures/clusters/:id" element={<ClusterDetailPage />} />
          <Route path="failures/rules" element={<FailureRulesPage />} />
          <Route path="metrics" element={<MetricsPage />} />
          <Route path="sql" element={<SqlPage />} />
          <Route path="*" element={<NotFoundPage />} />
        </Route>
      </Routes>
    </BrowserRouter>
  </StrictMode>,
);
