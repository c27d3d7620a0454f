/** @type {import('jest').Config} */
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  injectGlobals: false, // tests import { describe, it, expect, jest } from '@jest/globals'
  clearMocks: true,
  restoreMocks: true,
};
/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/no-leaked-sockets.ts'],
    },
  ],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 10_000,
  collectCoverageFrom: ['src/**/*.ts', '!src/generated/**'],
};
