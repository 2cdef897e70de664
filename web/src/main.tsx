import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { ApiKeysPage } from './admin/ApiKeysPage';
import { AuditLogPage } from './admin/AuditLogPage';
import { BillingPage } from './admin/BillingPage';
import { MembersPage } from './admin/MembersPage';
import { ProjectsPage } from './admin/ProjectsPage';
import { OidcCallbackPage } from './auth/OidcCallbackPage';
import { SignInPage } from './auth/SignInPage';
import { ActionDetailPage } from './control/ActionDetailPage';
import { ActionsPage } from './control/ActionsPage';
import { DeploymentDetailPage } from './control/DeploymentDetailPage';
import { DeploymentsPage } from './control/DeploymentsPage';
import { ModelRoutesPage, PoliciesPage } from './control/PoliciesPage';
import { NotFoundPage } from './shell/NotFoundPage';
import { SignedIn } from './shell/SignedIn';
import { TraceDetailPage } from './traces/TraceDetailPage';
import { TracesPage } from './traces/TracesPage';
import './styles.css';

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
          <Route path="control" element={<Navigate to="/control/actions" replace />} />
          <Route path="control/actions" element={<ActionsPage />} />
          <Route path="control/actions/:id" element={<ActionDetailPage />} />
          <Route path="control/policies" element={<PoliciesPage />} />
          <Route path="control/model-routes" element={<ModelRoutesPage />} />
          <Route path="prompt-deployments" element={<DeploymentsPage />} />
          <Route path="prompt-deployments/:id" element={<DeploymentDetailPage />} />
          <Route path="admin" element={<Navigate to="/admin/projects" replace />} />
          <Route path="admin/projects" element={<ProjectsPage />} />
          <Route path="admin/api-keys" element={<ApiKeysPage />} />
          <Route path="admin/members" element={<MembersPage />} />
          <Route path="admin/billing" element={<BillingPage />} />
          <Route path="admin/audit-log" element={<AuditLogPage />} />
          <Route path="*" element={<NotFoundPage />} />
        </Route>
      </Routes>
    </BrowserRouter>
  </StrictMode>,
);
