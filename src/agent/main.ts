#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { errorMeta } from '../errors';
import { fileLogger } from '../lib/log';
import { parseAgentConfig, validationCounts } from '../lib/validate';
import { Agent } from './agent';
import { agentStartup } from './startup-phases';
import type { AbortedTaskState } from '../states/task-model';

/**
 * pilotfish-agent CONFIG.json — runs one pilot's agent. Exits 0 after a clean shutdown
 * (cancel, runtime limit, lost client), 2 on a bad config, 3 when it could not start, 1 on a
 * crash. A batch job's script starts it again after a crash or a kill (agent.restarts), with
 * PILOTFISH_AGENT_RESTART saying which start it is; not after 0, 2 or 3.
 */
async function main(): Promise<number> {
  agentStartup.mark('process');
  // a client's store URI (it may hold a password) is not for the tasks this agent starts,
  // which inherit its environment; the agent has its store from its config
  delete process.env['PILOTFISH_STORE'];
  const restart = Number(process.env['PILOTFISH_AGENT_RESTART'] ?? 0);
  delete process.env['PILOTFISH_AGENT_RESTART'];
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write('usage: pilotfish-agent CONFIG.json\n');
    return 2;
  }
  let cfg;
  try {
    cfg = parseAgentConfig(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    process.stderr.write(`pilotfish-agent: bad config ${file}: ${(e as Error).message}\n`);
    return 2;
  }
  agentStartup.mark('config');
  const log = fileLogger(cfg.sandbox, 'agent', cfg.logLevel ?? 'info');
  const agent = new Agent(cfg, log, file, Number.isInteger(restart) ? restart : 0);
  const stop = (final: AbortedTaskState, message: string) => () =>
    void agent.shutdown(final, message);
  process.on('SIGTERM', stop('CANCELED', 'agent received SIGTERM'));
  process.on('SIGINT', stop('CANCELED', 'agent received SIGINT'));
  // Whether the client lives is told by its heartbeats, so that a client can die and come back
  // (Session.open({ resume })) while the agent works on. An embedder that holds our stdin may
  // ask for EOF to mean the client is gone for good.
  if (cfg.watchStdin === true) {
    process.stdin.on('end', stop('FAILED', 'lost the client (stdin closed)'));
    process.stdin.resume();
  }
  try {
    await agent.start();
  } catch (e) {
    log.error('agent failed to start', errorMeta(e));
    process.stderr.write(`pilotfish-agent: failed to start: ${(e as Error).message}\n`);
    await agent.done; // start() asked for the shutdown (FAILED) as it failed
    await log.close();
    return 3;
  }
  const { final, message } = await agent.done;
  // not `message` as a key: winston appends a meta message to the log message
  log.info('agent exiting', { final, why: message, validations: validationCounts() });
  await log.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`pilotfish-agent: crashed: ${String(e)}\n`);
    process.exit(1);
  },
);
