import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EmbeddedStore } from '../../../../src/updater';
import { describeStoreConformance } from '../conformance';

describeStoreConformance('EmbeddedStore', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-conf-'));
  const store = await EmbeddedStore.open(dir);
  return {
    store,
    cleanup: () => Promise.resolve(fs.rmSync(dir, { recursive: true, force: true })),
  };
});
