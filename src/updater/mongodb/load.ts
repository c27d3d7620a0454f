import type * as AddressesModule from './addresses';
import type * as StoreModule from './store';

// The MongoDB driver takes ~90 ms of a process's start to load (measured on the bench's 2-core
// box): a process whose store is the embedded one (the default) loads these modules, and with
// them the driver, only when it is asked for a MongoDB session.

/** The MongoDB store (MongoStore), loaded on first use. */
export function mongoStoreModule(): typeof StoreModule {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./store') as typeof StoreModule;
}

/** Where a MongoDB session's client listens (AddressBoard), loaded on first use. */
export function mongoAddressesModule(): typeof AddressesModule {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./addresses') as typeof AddressesModule;
}
