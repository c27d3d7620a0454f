import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { FileChannel } from '../../../../src/agent/file-channel';
import { ClientRuntime } from '../../../../src/client/runtime/runtime';
import { silentLogger } from '../../../../src/lib/logger';

describe("a session's file channels", () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it("gives each pilot's agent a file address and keys that work, and binds the same address again on resume", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'pf-file-links-'));
    cleanup.push(() => rmSync(root, { recursive: true, force: true }));
    const first = await ClientRuntime.open({ dir: root, logger: silentLogger });
    const link = await first.openPilot('pilot.0000');
    const cfg = first.links.agentConfig('pilot.0000');
    expect(cfg.addresses.files).toBe(link.ports.files);
    expect(cfg.addresses.files).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);

    const src = path.join(root, 'input.txt');
    writeFileSync(src, 'data');
    first.links.files.allow('pilot.0000', 'task.0', { read: [src] });
    const files = new FileChannel({
      address: cfg.addresses.files!,
      security: cfg.curve,
      session: first.uid,
      pilot: 'pilot.0000',
      log: silentLogger,
    });
    await expect(files.fetch('task.0', src, path.join(root, 'copy'))).resolves.toMatchObject({
      bytes: 4,
    });
    await expect(files.fetch('task.1', src, path.join(root, 'copy'))).rejects.toMatchObject({
      code: 'EACCES',
    });
    await files.close();
    expect(first.refusals().messages).toBe(1);
    await first.close();

    // a resumed session binds the pilot's sockets where its agent knows them
    const again = await ClientRuntime.open({ dir: root, logger: silentLogger });
    cleanup.push(() => again.close());
    const relinked = await again.openPilot('pilot.0000', link);
    expect(relinked.ports.files).toBe(link.ports.files);
  });
});
