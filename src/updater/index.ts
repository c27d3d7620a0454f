export type { StateStore, WatchBulk } from './state-store';
export {
  StoreError,
  StoreUnreachableError,
  StoreUnwritableError,
  type StoreCondition,
  type StoreUnreachable,
  type StoreUnwritable,
} from './state-store';
export { EmbeddedStore, type RecoveryReport } from './embedded/store';
export { StoreServer, type StoreServerOptions } from './embedded/store-server';
export { UpdateWorker, type UpdateWorkerOptions, type UpdateWorkerStats } from './update-worker';
