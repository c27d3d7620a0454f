#!/usr/bin/env node
// Removes what tsc emitted last time (dist/src, dist/bench, dist/examples, dist/schemas) before
// it emits again: tsc never deletes the output of a source file that was moved or removed, and
// such a stale file can shadow the new one (`launch.js` beside a new `launch/index.js`).
// dist/native is kept: scripts/build-native.sh rebuilds it only when its sources change.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const dist = path.resolve(__dirname, '..', 'dist');
for (const dir of ['src', 'bench', 'examples', 'schemas']) {
  fs.rmSync(path.join(dist, dir), { recursive: true, force: true });
}
