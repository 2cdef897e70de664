import { lazy, StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { ApiKeysPage } from './admin/ApiKeysPage';
import { AuditLogPage } from './admin/AuditLogPage';
import { BillingPage } from './admin/BillingPage';
import { MembersPage } from './admin/MembersPage';
import { ProjectsPage } from './admin/ProjectsPage';
import { WebhooksPage } from './admin/WebhooksPage';
import { OidcCallbackPage } from './auth/OidcCallbackPage';
import { SignInPage } from './auth/SignInPage';
import { ActionDetailPage } from './control/ActionDetailPage';
import { ActionsPage } from './control/ActionsPage';
import { DeploymentDetailPage } from './control/DeploymentDetailPage';
import { DeploymentsPage } from './control/DeploymentsPage';
import { ModelRoutesPage, PoliciesPage } from './control/PoliciesPage';
import { ClusterDetailPage } from './failures/ClusterDetailPage';
import { FailureRulesPage } from './failures/FailureRulesPage';
import { FailuresPage } from './failures/FailuresPage';
import { SessionDetailPage } from './sessions/SessionDetailPage';
import { SessionsPage } from './sessions/SessionsPage';
import { ComparePage } from './evals/ComparePage';
import { DatasetPage } from './evals/DatasetPage';
import { DatasetsPage } from './evals/DatasetsPage';
import { EvalRulesPage } from './evals/EvalRulesPage';
import { EvaluationsPage } from './evals/EvaluationsPage';
import { RunPage } from './evals/RunPage';
import { NotFoundPage } from './shell/NotFoundPage';
import { SignedIn } from './shell/SignedIn';
import { TraceDetailPage } from './traces/TraceDetailPage';
import { TracesPage } from './traces/TracesPage';
import './styles.css';

// The charts (uPlot) load with the metrics page only, not with the initial JS.
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
          <Route path="failures" element={<FailuresPage />} />
          <Route path="failures/clusters/:id" element={<ClusterDetailPage />} />
          <Route path="failures/rules" element={<FailureRulesPage />} />
          <Route
            path="metrics"
            element={
              <Suspense fallback={<p aria-live="polite">Loading the metrics page…</p>}>
                <MetricsPage />
              </Suspense>
            }
          />
          <Route path="*" element={<NotFoundPage />} />
        </Route>
      </Routes>
    </BrowserRouter>
  </StrictMode>,
);
