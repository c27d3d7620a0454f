'use strict';
// What the client scripts of the resume tests (resume-client.js, kill-loop-client.js) share:
// managers that append every callback to `log`, one line each, so the test can read them back.
const { appendFileSync } = require('node:fs');
const { PilotManager, TaskManager } = require('../../dist/src');

function record(session, log) {
  const pmgr = new PilotManager(session);
  const tmgr = new TaskManager(session);
  tmgr.onState((t, s, i) => appendFileSync(log, `task ${t.uid} ${s} ${i.attempt}\n`));
  pmgr.onState((p, s, i) => appendFileSync(log, `pilot ${p.uid} ${s} ${i.attempt}\n`));
  return { pmgr, tmgr };
}

module.exports = { record };
