import type { AgentConfig } from '../../generated';
import { systemClock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import { AddressFile } from '../../updater/embedded/address-file';
import { mongoAddressesModule } from '../../updater/mongodb/load';
import { CLIENT_TIMEOUT_MS } from '../lifecycle/core';
import { RelocationShell, type RelocationDeps } from './shell';

/**
 * An agent can learn where a resumed client listens, if not where it did (docs/state-store.md,
 * "Session resume"): a MongoDB session's from its database, an embedded one's from its file.
 * Undefined when the config names neither.
 */
export function relocationFor(
  cfg: AgentConfig,
  log: Logger,
  agent: Pick<RelocationDeps, 'connections' | 'moved'>,
): RelocationShell | undefined {
  const { mongodb, addressFile } = cfg;
  if (mongodb === undefined && addressFile === undefined) return undefined;
  // a MongoDB session's agents write to the database: no store socket to move
  const { store, ...rest } = cfg.addresses;
  const addresses = mongodb === undefined && store !== undefined ? { ...rest, store } : rest;
  return new RelocationShell({
    session: cfg.session,
    pilot: cfg.pilot,
    source: () =>
      mongodb !== undefined
        ? mongoAddressesModule().AddressBoard.connect(mongodb.uri, mongodb.db)
        : Promise.resolve(new AddressFile(addressFile!)),
    addresses,
    heartbeatTimeoutMs: cfg.heartbeatTimeoutMs ?? CLIENT_TIMEOUT_MS,
    clock: systemClock,
    log: log.child({ component: 'Relocation' }),
    ...agent,
  });
}
