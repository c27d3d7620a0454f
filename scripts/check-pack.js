#!/usr/bin/env node
// `npm pack` / `npm publish` (package.json "prepack"): refuses to pack a package that would not
// install whole: the build output and the C spawner helper must be there, the helper newer than
// its source (dist/src is not compared with src: `npm test` rewrites src/generated after its
// build). It does not build (a build empties dist/, which running agents use): run
// `npm run build` first, on Linux x86-64 with a C compiler and libc.a (libc6-dev), so that the
// shipped helper is the static one that runs on any Linux x86-64.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const mtime = (rel) => fs.statSync(path.join(root, rel)).mtimeMs;

const problems = [];
for (const rel of [
  'dist/src/index.js',
  'dist/src/agent/main.js',
  'dist/native/pf-spawner',
  'dist/dashboard/app.js',
]) {
  if (!fs.existsSync(path.join(root, rel))) problems.push(`${rel} is missing`);
}
if (
  problems.length === 0 &&
  mtime('dist/native/pf-spawner') < mtime('native/spawner/pf-spawner.c')
) {
  problems.push('dist/native/pf-spawner is older than native/spawner/pf-spawner.c');
}
if (problems.length > 0) {
  console.error(`npm pack: ${problems.join('; ')}: run 'npm run build' (with a C compiler) first`);
  process.exit(1);
}
