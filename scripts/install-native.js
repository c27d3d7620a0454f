#!/usr/bin/env node
// The install script of an installed pilotfish (package.json "install"; `npm rebuild pilotfish`
// runs it again): makes sure dist/native/pf-spawner, the Executor's C spawner helper, runs on
// this machine. The package ships one built for Linux x86-64 (static, so any glibc or musl will
// do); where it does not run (another architecture), this builds it from the shipped source
// with ${CC:-cc}. Without a compiler it removes the helper, says why in one line and in
// dist/native/pf-spawner.why (the agent repeats it in its log), and the agent starts tasks
// through the slower Node helper. It never fails the install.
// In a checkout (src/ is there) it does nothing: `npm run build` builds the helper.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const bin = path.join(root, 'dist', 'native', 'pf-spawner');
const whyFile = `${bin}.why`;
const source = path.join(root, 'native', 'spawner', 'pf-spawner.c');
const FIX =
  "install a C compiler (e.g. 'apt-get install gcc libc6-dev'), then run 'npm rebuild pilotfish'";

/** ELF e_machine of each process.arch this may meet. */
const ELF_MACHINE = { ia32: 3, arm: 40, ppc64: 21, s390x: 22, x64: 62, arm64: 183, riscv64: 243 };

/** Why `file` does not run here as the helper, or undefined when it does (it says ready). */
function probe(file) {
  if (!fs.existsSync(file)) return 'not shipped';
  // A program for another architecture is not run: execvp would hand it to /bin/sh.
  const head = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  const n = fs.readSync(fd, head, 0, 20, 0);
  fs.closeSync(fd);
  const machine = n === 20 && head.toString('latin1', 0, 4) === '\x7fELF' && head.readUInt16LE(18);
  const want = ELF_MACHINE[process.arch];
  if (machine && want !== undefined && machine !== want) {
    return `it is built for another architecture (ELF machine ${machine}, this is ${process.arch})`;
  }
  // With stdin at EOF the helper says ready and exits 0 at once; it starts nothing.
  const r = spawnSync(file, [], { input: '', encoding: 'utf8', timeout: 10_000 });
  if (r.error !== undefined) return `it does not run here (${r.error.code ?? r.error.message})`;
  if (r.status === 0 && r.stdout.startsWith('{"ev":"ready"')) return undefined;
  // its last line, where it is text (a dynamic one says which glibc it lacks)
  const said = (r.stderr || r.stdout).trim().split('\n').pop().slice(0, 200);
  const text = /^[\x20-\x7e]+$/.test(said) ? `: ${said}` : '';
  return `it does not run here (exit ${r.status ?? r.signal}${text})`;
}

/** Builds the helper from its source into `bin`; why it could not, or undefined. */
function build() {
  const [cc, ...ccFlags] = (process.env.CC || 'cc').trim().split(/\s+/);
  const cflags = (process.env.CFLAGS || '').split(/\s+/).filter((f) => f !== '');
  const tmp = `${bin}.tmp`;
  const compile = (extra) =>
    spawnSync(cc, [...ccFlags, '-O2', '-std=c11', ...extra, ...cflags, '-o', tmp, source], {
      encoding: 'utf8',
      timeout: 120_000,
    });
  // static where the C library has libc.a: then any node of this architecture runs it
  let r = compile(['-static']);
  if (r.error === undefined && r.status !== 0) r = compile([]);
  if (r.error !== undefined) {
    return r.error.code === 'ENOENT' ? `no C compiler ('${cc}')` : `'${cc}': ${r.error.message}`;
  }
  if (r.status !== 0) {
    fs.rmSync(tmp, { force: true });
    const said = r.stderr.trim().split('\n').pop() || `exit ${r.status ?? r.signal}`;
    return `'${cc}' could not build it (${said})`;
  }
  const why = probe(tmp);
  if (why !== undefined) {
    fs.rmSync(tmp, { force: true });
    return `the one '${cc}' built: ${why}`;
  }
  fs.renameSync(tmp, bin);
  return undefined;
}

function main() {
  if (fs.existsSync(path.join(root, 'src'))) return;
  fs.rmSync(whyFile, { force: true });
  const shipped = probe(bin);
  if (shipped === undefined) return;
  let why = `the prebuilt helper: ${shipped}`;
  if (process.platform !== 'linux') {
    why = 'it runs on Linux only';
  } else if (fs.existsSync(source)) {
    const failed = build();
    if (failed === undefined) {
      console.log(`pilotfish: built the C spawner helper (the prebuilt one: ${shipped})`);
      return;
    }
    why = `${why}; ${failed}`;
  }
  fs.rmSync(bin, { force: true });
  const line =
    `pilotfish: no C spawner helper (${why}): tasks will start through the slower Node helper; ` +
    `to build it, ${FIX}`;
  fs.writeFileSync(whyFile, `${why}\n`);
  console.error(line);
}

try {
  main();
} catch (e) {
  // An install that cannot set up the helper still installs: the agent uses the Node one.
  console.error(
    `pilotfish: spawner helper not set up (${e.message}); tasks will start through the Node helper`,
  );
}
