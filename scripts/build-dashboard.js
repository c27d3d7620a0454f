#!/usr/bin/env node
// Builds the dashboard (web/dashboard) into dist/dashboard: its TypeScript bundled by esbuild
// into one script, with its page and style beside it. `pilotfish serve` serves these files.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const from = path.join(root, 'web', 'dashboard');
const to = path.join(root, 'dist', 'dashboard');

async function main() {
  fs.rmSync(to, { recursive: true, force: true });
  fs.mkdirSync(to, { recursive: true });
  await esbuild.build({
    entryPoints: [path.join(from, 'src', 'main.ts')],
    outfile: path.join(to, 'app.js'),
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['chrome110', 'firefox115', 'safari16'],
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const f of ['index.html', 'style.css']) {
    fs.copyFileSync(path.join(from, f), path.join(to, f));
  }
}

main().catch((e) => {
  process.stderr.write(`build-dashboard: ${e.message}\n`);
  process.exit(1);
});
