import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync, statSync, writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { LinePrinter, OutFiles } from '../../../src/cli/log-output';
import { tempDirs } from '../../support/temp-dirs';

const openFds = (): number => readdirSync('/proc/self/fd').length;

describe('OutFiles', () => {
  const temp = tempDirs('pf-out-files-');

  it('writes many interleaved tasks through a bounded number of open files', () => {
    const root = temp.make();
    const out = new OutFiles(root);
    const before = openFds();
    const uids = Array.from({ length: 300 }, (_, i) => `task.${String(i).padStart(6, '0')}`);
    // no end frames (a writer killed): every task's files stay wanted to the end
    for (let round = 0; round < 3; round++) {
      for (const uid of uids) {
        out.data(uid, 'stdout', Buffer.from(`${uid} ${round}\n`));
        if (round === 1) out.data(uid, 'stderr', Buffer.from('e'));
      }
      out.flush();
      expect(openFds() - before).toBeLessThanOrEqual(128);
    }
    out.closeAll();
    expect(openFds()).toBe(before);
    expect(out.tasks).toBe(300);
    for (const uid of [uids[0]!, uids[299]!]) {
      expect(readFileSync(path.join(root, uid, 'stdout'), 'utf8')).toBe(
        `${uid} 0\n${uid} 1\n${uid} 2\n`,
      );
      expect(readFileSync(path.join(root, uid, 'stderr'), 'utf8')).toBe('e');
    }
  });

  it("replaces an earlier export's files and makes them its owner's alone", () => {
    const root = temp.make();
    mkdirSync(path.join(root, 't'), { mode: 0o755 });
    for (const s of ['stdout', 'stderr']) {
      writeFileSync(path.join(root, 't', s), 'old content\n');
      chmodSync(path.join(root, 't', s), 0o644);
    }
    const out = new OutFiles(root);
    out.data('t', 'stdout', Buffer.from('new\n'));
    out.end('t');
    out.closeAll();
    expect(readFileSync(path.join(root, 't', 'stdout'), 'utf8')).toBe('new\n');
    expect(readFileSync(path.join(root, 't', 'stderr'), 'utf8')).toBe('');
    const modes = ['', 'stdout', 'stderr'].map(
      (n) => statSync(path.join(root, 't', n)).mode & 0o777,
    );
    expect(modes).toEqual([0o700, 0o600, 0o600]);
  });
});

describe('LinePrinter', () => {
  it("keeps each task's characters and lines whole across its frames, other tasks between", async () => {
    const sink = new PassThrough();
    let text = '';
    sink.on('data', (d: Buffer) => (text += d.toString()));
    const p = new LinePrinter((uid, attempt, line) => `${uid}#${attempt} ${line}\n`, sink);
    const euro = Buffer.from('€');
    p.data('a', 1, Buffer.concat([Buffer.from('x'), euro.subarray(0, 1)]));
    p.data('b', 2, Buffer.from('b1\nb'));
    p.data('a', 1, Buffer.concat([euro.subarray(1), Buffer.from('\ny')]));
    p.end('a', 1);
    p.line('c', 1, 'from a file');
    p.endAll(() => 2);
    await p.flush();
    expect(text).toBe('b#2 b1\na#1 x€\na#1 y\nc#1 from a file\nb#2 b\n');
  });
});
