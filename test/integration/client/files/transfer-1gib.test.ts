import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { clientChild, type ClientChild } from '../../../support/client-child';

const GIB = 2 ** 30;
const SUPPORT = path.resolve(__dirname, '../../../support');
/** The source, the agent's copy and the copy sent back, with room to spare. */
const NEEDED = 3.5 * GIB;

/** A temp dir on a file system with room for the test's files, or why there is none. */
function roomyDir(): { base: string } | { why: string } {
  for (const base of [os.tmpdir(), '/dev/shm']) {
    try {
      const s = fs.statfsSync(base);
      if (s.bavail * s.bsize >= NEEDED) return { base };
    } catch {
      // not there: try the next
    }
  }
  return { why: `no file system with ${NEEDED / GIB} GiB free (${os.tmpdir()}, /dev/shm)` };
}

function vmHWMkB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]);
}

const room = roomyDir();
const describeIfRoom = 'base' in room ? describe : describe.skip;
if ('why' in room) process.stderr.write(`1 GiB transfer test skipped: ${room.why}\n`);

describeIfRoom('file channel, 1 GiB in and out', () => {
  let dir: string;
  let server: ClientChild | undefined;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join((room as { base: string }).base, 'pf-transfer-1gib-'));
  });

  afterAll(async () => {
    if (server !== undefined && server.proc.exitCode === null) {
      server.proc.kill('SIGTERM');
      await server.exit;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('moves 1 GiB each way with the client process under 200 MiB', async () => {
    const client = path.join(dir, 'client');
    const node = path.join(dir, 'node');
    fs.mkdirSync(client);
    fs.mkdirSync(node);
    const src = path.join(client, 'src.bin');
    const back = path.join(client, 'back.bin');
    const local = path.join(node, 'src.bin');
    execFileSync('dd', ['if=/dev/urandom', `of=${src}`, 'bs=4M', 'count=256', 'status=none']);
    expect(fs.statSync(src).size).toBe(GIB);

    server = clientChild(path.join(SUPPORT, 'file-server-child.js'), [dir, src, back], {
      ...process.env,
    });
    const { address, curve } = (await server.next('file server address', 30_000)) as {
      address: string;
      curve: unknown;
    };
    const planFile = path.join(dir, 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify({ address, curve, src, local, back }));
    const agent = clientChild(path.join(SUPPORT, 'file-agent-child.js'), [planFile], {
      ...process.env,
    });
    const report = (await agent.next('1 GiB fetch and send', 170_000)) as {
      fetch: { bytes: number; sha256: string; ms: number; vmHWMkB: number };
      send: { bytes: number; sha256: string; ms: number };
      progress: number;
      vmHWMkB: number;
      error?: unknown;
    };
    expect(report.error).toBeUndefined();
    await agent.exit;
    const serverHWMkB = vmHWMkB(server.proc.pid!);

    const sha = execFileSync('sha256sum', [src], { encoding: 'utf8' }).split(' ')[0];
    expect(report.fetch).toMatchObject({ bytes: GIB, sha256: sha });
    expect(report.send).toMatchObject({ bytes: GIB, sha256: sha });
    execFileSync('cmp', [src, back]); // throws if they differ
    expect(fs.statSync(back).mode & 0o777).toBe(0o600);

    const mbps = (ms: number): number => Math.round(GIB / 2 ** 20 / (ms / 1_000));
    process.stderr.write(
      `${JSON.stringify({
        bench: 'file-transfer',
        fetchMBps: mbps(report.fetch.ms),
        sendMBps: mbps(report.send.ms),
        clientVmHWMMiB: Math.round(serverHWMkB / 1024),
        agentVmHWMMiB: Math.round(report.vmHWMkB / 1024),
        agentVmHWMAfterFetchMiB: Math.round(report.fetch.vmHWMkB / 1024),
        progressReports: report.progress,
      })}\n`,
    );
    expect(serverHWMkB).toBeLessThan(200 * 1024);
    expect(report.vmHWMkB).toBeLessThan(200 * 1024);
  }, 240_000);
});
