// Flat config: @eslint/js and typescript-eslint recommended rules over the whole repository.
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Module boundaries (DESIGN.md §2 Layout): a file in src/modules/<A>/ may import from another
// module <B> only B's top-level service.ts, schemas.ts or types.ts; never B's repo or internals.
// A secondary service (B/x-service.ts) that other modules use is re-exported by B's service.ts. Same-module imports and src/platform, src/stores,
// src/providers, src/jobs stay free. Relative specifiers differ with the importing file's depth
// (src/modules/ingest/x.ts reaches src/modules/ with `../`, src/modules/ingest/otlp/x.ts with
// `../../`), so there is one block per module and depth, each with a regex that resolves exactly
// that depth: `(../){depth}<B>/<file>` or `(../){depth}../modules/<B>/<file>`.
const MODULE_PUBLIC = String.raw`(?:service|schemas|types)(?:\.[jt]s)?$`;
const BOUNDARY_MESSAGE =
  'Module boundary: import only another module\'s service.ts, schemas.ts or types.ts (which re-exports its secondary services), ' +
  'never its repo or internals (DESIGN.md §2 "Layout"; docs/architecture.md). Move shared vocabulary ' +
  'to src/platform/ or the owning module\'s types.ts/schemas.ts, or call its service.';
const moduleBoundaries = readdirSync(new URL('./src/modules/', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .flatMap(({ name }) =>
    [1, 2, 3].map((depth) => {
      const up = String.raw`(?:\.\./){${depth}}`;
      const other = String.raw`(?!${name}/)(?!\.)[^/]+/`;
      return {
        files: [`src/modules/${name}/${'*/'.repeat(depth - 1)}*.ts`],
        rules: {
          'no-restricted-imports': [
            'error',
            { patterns: [{ regex: `^${up}(?:\\.\\./modules/)?${other}(?!${MODULE_PUBLIC})`, message: BOUNDARY_MESSAGE }] },
          ],
        },
      };
    }),
  );

export default defineConfig(
  // bench/.data/ holds generated benchmark inputs (gitignored), not source.
  // web/dist/ is the built dashboard; web/src/api/schema.d.ts is generated (npm run web:types).
  // sdk/dist/ is the SDK's tsc output (npm run build in sdk/); examples install their own node_modules.
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bench/.data/', 'web/dist/', 'web/src/api/schema.d.ts', 'sdk/dist/', 'examples/*/node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      // `_`-prefixed names mark deliberately unused parameters and destructured leftovers.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Input validation here matches control characters on purpose (e.g. rejecting \x00-\x1f in ids).
      'no-control-regex': 'off',
      // Tagged templates are our SQL builders' calls, used for their effect: where.and`a = ${x}`.
      '@typescript-eslint/no-unused-expressions': ['error', { allowTaggedTemplates: true }],
    },
  },
  ...moduleBoundaries,
  {
    // Plain JS files (configs, bench scripts) run on Node; TypeScript files get globals from tsc.
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly' },
    },
  },
);
