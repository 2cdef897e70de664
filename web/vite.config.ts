import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `npm run web:build` → web/dist (served by the API at /); `npm run web:dev` serves the sources with
// hot reload and sends /v1 to the API of `npm start`.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true },
  server: { proxy: { '/v1': 'http://localhost:8080' } },
});
