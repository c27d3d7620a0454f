import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'coverage/**',
      'scratch/**',
      '.pilotfish/**',
      'src/generated/**',
      '*.config.*',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      curly: ['error', 'multi-line'],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { fixStyle: 'separate-type-imports' },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    // plain CommonJS scripts (jest hooks, generators) are not part of the TS project
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: false, program: null },
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        setImmediate: 'readonly',
      },
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // pure decision cores: no I/O, no clock, no randomness
    files: ['src/states/**/*.ts', 'src/components/*/core.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['zeromq', 'winston', 'fs', 'node:fs', 'child_process', 'node:child_process'],
          patterns: ['**/agent/**', '**/updater/**', '**/lib/log', '**/transport/**'],
        },
      ],
      'no-restricted-globals': ['error', { name: 'Date', message: 'take time as an argument' }],
      'no-restricted-properties': [
        'error',
        { object: 'Math', property: 'random', message: 'take randomness as an argument' },
      ],
    },
  },
);
