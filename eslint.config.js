// Flat config: @eslint/js and typescript-eslint recommended rules over the whole repository.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // bench/.data/ holds generated benchmark inputs (gitignored), not source.
  // web/dist/ is the built dashboard; web/src/api/schema.d.ts is generated (npm run web:types).
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bench/.data/', 'web/dist/', 'web/src/api/schema.d.ts'] },
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
  {
    // Plain JS files (configs, bench scripts) run on Node; TypeScript files get globals from tsc.
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly' },
    },
  },
);
