#!/usr/bin/env node
// The report of pilotfish's public API, api/pilotfish.api.md, by API Extractor (config:
// api-extractor.json): every export of dist/src/index.d.ts with its signature, and a warning
// line for each type an export uses that the package does not export.
//   node scripts/api-report.js check   (npm run api:check, part of npm test): exits 1, showing
//                                      the diff, when the build's exports differ from the report
//   node scripts/api-report.js update  (npm run api:update, which builds first): rewrites it
// Both read the build (dist/src), not src: run `npm run build` (or api:update) after a change.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Extractor, ExtractorConfig } = require('@microsoft/api-extractor');

const root = path.resolve(__dirname, '..');
const mode = process.argv[2];
if (mode !== 'check' && mode !== 'update') {
  console.error('usage: node scripts/api-report.js check|update');
  process.exit(2);
}
const config = ExtractorConfig.loadFileAndPrepare(path.join(root, 'api-extractor.json'));
const rel = (p) => path.relative(root, p);
if (!fs.existsSync(config.mainEntryPointFilePath)) {
  console.error(
    `api-report: ${rel(config.mainEntryPointFilePath)} is missing: run 'npm run build' first`,
  );
  process.exit(1);
}
const result = Extractor.invoke(config, { localBuild: mode === 'update' });
const report = rel(config.reportFilePath);
if (mode === 'update') {
  if (!result.succeeded) process.exit(1);
  console.log(
    result.apiReportChanged ? `api-report: ${report} rewritten` : `api-report: ${report} unchanged`,
  );
  process.exit(0);
}
if (result.apiReportChanged) {
  const temp = rel(config.reportTempFilePath);
  spawnSync('diff', ['-u', '--label', report, '--label', temp, report, temp], {
    cwd: root,
    stdio: 'inherit',
  });
  console.error(
    `api-report: the package's exports (${rel(config.mainEntryPointFilePath)}) differ from ${report} ` +
      `(the diff above: - the report, + the build). If the change is meant, run 'npm run api:update' ` +
      `and commit ${report} with it; say what a user sees in CHANGELOG.md.`,
  );
  process.exit(1);
}
if (!result.succeeded) process.exit(1);
console.log(`api-report: ${report} matches the build's exports`);
