#!/usr/bin/env node
// Adds lockfile entries for optional platform packages (other OSes/CPUs) that npm left out.
//
// Why: the registry mirror this project installs from lacks some versions of other
// platforms' prebuilt packages (e.g. @msgpackr-extract/msgpackr-extract-darwin-arm64@3.0.7),
// so `npm install` omits them from package-lock.json, and `npm ci` then refuses the lockfile
// ("Missing: ... from lock file"). The entries added here name the version the parent asks
// for and the os/cpu the package declares (read from any version the registry has), so npm ci
// skips them on other platforms and installs them where they belong.
// Run after `npm install` changes dependencies: node scripts/complete-lockfile.js
'use strict';
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

const file = 'package-lock.json';
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pkgs = lock.packages;
const platformOf = new Map();

function platform(name) {
  if (!platformOf.has(name)) {
    const out = execFileSync('npm', ['view', name, 'os', 'cpu', 'license', '--json'], {
      encoding: 'utf8',
    });
    platformOf.set(name, JSON.parse(out));
  }
  return platformOf.get(name);
}

let added = 0;
for (const [where, entry] of Object.entries(pkgs)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${where === '' ? '' : `${where}/`}node_modules/${name}`;
    if (pkgs[nested] || pkgs[`node_modules/${name}`]) continue;
    const meta = platform(name);
    pkgs[`node_modules/${name}`] = {
      version,
      ...(meta.cpu ? { cpu: meta.cpu } : {}),
      ...(entry.dev ? { dev: true } : {}),
      ...(meta.license ? { license: meta.license } : {}),
      optional: true,
      ...(meta.os ? { os: meta.os } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} optional platform entries`);
