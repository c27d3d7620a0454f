#!/usr/bin/env node
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { errorMeta } from '../../errors';
import { fileLogger } from '../../lib/log';
import { parseAgentConfig } from '../../lib/validate';
import { SubAgent } from './sub-agent';

/**
 * pilotfish-subagent CONFIG.json NODE HUB — one node's executing sub-agent (sub-agent.ts), with
 * its pilot's agent config (the keys). Exits 0 once it ended as asked or found its hub gone (its
 * supervisor then stops), 2 on bad arguments, 1 on a crash (its supervisor starts it again).
 */
async function main(): Promise<number> {
  delete process.env['PILOTFISH_STORE'];
  const [file, node, hub] = process.argv.slice(2);
  if (file === undefined || node === undefined || hub === undefined) {
    process.stderr.write('usage: pilotfish-subagent CONFIG.json NODE HUB\n');
    return 2;
  }
  let cfg;
  try {
    cfg = parseAgentConfig(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    process.stderr.write(`pilotfish-subagent: bad config ${file}: ${(e as Error).message}\n`);
    return 2;
  }
  const dir = path.join(cfg.sandbox, 'subagents');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const log = fileLogger(dir, `subagent-${node}`, cfg.logLevel ?? 'info');
  const sub = new SubAgent({ cfg, node, hub, log });
  // the hub decides when tasks end: a signal ends them here as the pilot's end would
  process.on('SIGTERM', () => void sub.stop('received SIGTERM'));
  process.on('SIGINT', () => void sub.stop('received SIGINT'));
  try {
    await sub.start();
  } catch (e) {
    log.error('sub-agent failed to start', errorMeta(e));
    process.stderr.write(`pilotfish-subagent: failed to start: ${(e as Error).message}\n`);
    await log.close();
    return 1;
  }
  await sub.done;
  await log.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`pilotfish-subagent: crashed: ${String(e)}\n`);
    process.exit(1);
  },
);
