import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Process fences: code that runs in a process of its own must start fast and stand alone, so it
 * may import Node built-ins (`node:` specifiers), files of its own folder (`./`, never `..`) and
 * the specifiers `also` names exactly; any other import is an error, type-only ones included.
 * test/unit/lint-fences.test.ts checks that each fence stops what it should.
 */
function processFence(files, what, also = []) {
  const exact = also.map((spec) => `${spec.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const allowed = ['node:', '\\./(?!.*\\.\\.)', ...exact];
  const besides = also.length === 0 ? '' : `, and ${also.map((s) => `'${s}'`).join(', ')}`;
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(?!${allowed.join('|')})`,
              message: `${what} may import only Node built-ins (node:…), files of its own folder${besides}: it is loaded by a process of its own, which must start fast and stand alone (eslint.config.mjs; docs/architecture.md, "Which code runs in which process").`,
            },
          ],
        },
      ],
    },
  };
}

/** The dependency-free files of src/lib that the Node spawner helper shares with the agent. */
const HELPER_LIB = ['errno-text', 'file-tail', 'output-frames', 'stream-appender'];

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
        clearTimeout: 'readonly',
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
  // the Node spawner helper (src/components/executor/process/helper/main.ts)
  processFence(
    ['src/components/executor/process/helper/**/*.ts'],
    "The Node spawner helper's code",
    HELPER_LIB.map((name) => `../../../../lib/${name}`),
  ),
  // and what it takes from src/lib, so that nothing comes in through them
  processFence(
    HELPER_LIB.map((name) => `src/lib/${name}.ts`),
    'A file of src/lib that the Node spawner helper imports',
  ),
  // a Node function worker (src/components/executor/functions/worker/main.ts): msgpack is its wire
  processFence(
    ['src/components/executor/functions/worker/**/*.ts'],
    "A Node function worker's code",
    ['msgpackr'],
  ),
);
