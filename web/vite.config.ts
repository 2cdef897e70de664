import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `npm run web:build` → web/dist (served by the API at /); `npm run web:dev` serves the sources with
// hot reload and sends /v1 and the sign-in endpoints beside it (/auth/config, /auth/dev-*) to the
// API of `npm start`; /auth/callback is a page of the app itself.
const API = 'http://localhost:8080';
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true },
  server: { proxy: { '/v1': API, '^/auth/(config|dev-)': API } },
});
