import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { OidcCallbackPage } from './auth/OidcCallbackPage';
import { SignInPage } from './auth/SignInPage';
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
          <Route path="*" element={<NotFoundPage />} />
        </Route>
      </Routes>
    </BrowserRouter>
  </StrictMode>,
);
