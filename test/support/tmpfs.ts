import { afterEach } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * Why tmpfs tests cannot run here, or undefined when they can: mounting needs root (CI runs as
 * root) and a kernel that lets this process mount (checked once, with a real mount).
 */
export const tmpfsUnavailable: string | undefined = probe();

function probe(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: mounting a tmpfs needs root';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-tmpfs-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
    execFileSync('umount', [dir], { stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return `mount -t tmpfs failed: ${(e as Error).message.split('\n')[0]}`;
  } finally {
    fs.rmdirSync(dir);
  }
}

/** A small tmpfs mounted on a fresh temp dir, and a filler file that takes all its space. */
export class Tmpfs {
  private constructor(readonly dir: string) {}

  /** Mounts a tmpfs of `size` (mount's syntax: '2m', '256k'). */
  static mount(size: string): Tmpfs {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-tmpfs-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
    } catch (e) {
      fs.rmdirSync(dir);
      throw e;
    }
    return new Tmpfs(dir);
  }

  get filler(): string {
    return path.join(this.dir, 'filler');
  }

  /**
   * Appends to the filler until the filesystem says ENOSPC (pages other files left partly
   * used can still take a few bytes each). Returns the bytes written.
   */
  fill(): number {
    const fd = fs.openSync(this.filler, 'a');
    let bytes = 0;
    try {
      for (const size of [65_536, 4_096, 1]) {
        const chunk = Buffer.alloc(size, 0x2e);
        for (;;) {
          try {
            bytes += fs.writeSync(fd, chunk);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
            break;
          }
        }
      }
    } finally {
      fs.closeSync(fd);
    }
    return bytes;
  }

  /** Gives the filler's space back. */
  free(): void {
    fs.rmSync(this.filler, { force: true });
  }

  /** Unmounts (lazily if something still holds a file open) and removes the mount point. */
  unmount(): void {
    try {
      execFileSync('umount', [this.dir], { stdio: 'pipe' });
    } catch {
      execFileSync('umount', ['-l', this.dir], { stdio: 'pipe' });
    }
    fs.rmdirSync(this.dir);
  }
}

/**
 * For a describe block: `mount()` gives a tmpfs of `size` that is unmounted after each test,
 * so a test that fails midway leaves no mount behind.
 */
export function tmpfsPerTest(size: string): () => Tmpfs {
  const mounts: Tmpfs[] = [];
  afterEach(() => {
    for (const m of mounts.splice(0)) m.unmount();
  });
  return () => {
    const m = Tmpfs.mount(size);
    mounts.push(m);
    return m;
  };
}
