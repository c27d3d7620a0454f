/**
 * A test machine whose cgroups are v2 alone, with every controller on the tree, as on a machine
 * without v1 (this one has memory, pids and cpu on v1, so its v2 tree has none): Debian's kernel
 * under QEMU (software emulation), the host's root over 9p as its root,
 * a fresh /proc, /sys, /run (TMPDIR is /run/tmp) and the cgroup2 tree of its own. A command (a
 * shell script) runs as its PID 1's child, as root; what it writes to files outside /run and
 * /dev/shm lands on the host. The machine powers off when the command ends. scripts/system-deps.sh installs QEMU,
 * the kernel and busybox.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const HERE = path.join(__dirname, 'vm');

/** The kernel of the test machine (Debian's newest in /boot), or undefined. */
function kernel(): { image: string; release: string } | undefined {
  let names: string[];
  try {
    names = fs.readdirSync('/boot').filter((n) => n.startsWith('vmlinuz-'));
  } catch {
    return undefined;
  }
  const release = names
    .map((n) => n.slice('vmlinuz-'.length))
    .filter((r) => fs.existsSync(path.join('/lib/modules', r, 'modules.dep')))
    .sort()
    .at(-1);
  return release === undefined ? undefined : { image: `/boot/vmlinuz-${release}`, release };
}

/** Whether /bin/busybox runs without a C library (the initramfs has none): ldd says so. */
function staticBusybox(): boolean {
  try {
    execFileSync('ldd', ['/bin/busybox'], { stdio: 'ignore' });
    return false; // it lists libraries
  } catch {
    return true; // "not a dynamic executable"
  }
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .some((d) => d !== '' && fs.existsSync(path.join(d, command)));
}

/** Why no test machine can be run here (for a skip), or undefined. */
export function vmMissing(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'not Linux on x86-64';
  if (process.getuid?.() !== 0) return 'QEMU with the host root over 9p needs root';
  if (!onPath('qemu-system-x86_64')) return 'no qemu-system-x86_64 (scripts/system-deps.sh)';
  if (!fs.existsSync('/bin/busybox')) return 'no /bin/busybox (scripts/system-deps.sh)';
  if (!staticBusybox()) return '/bin/busybox is not static (Debian: busybox-static)';
  if (kernel() === undefined) return 'no kernel with modules in /boot (scripts/system-deps.sh)';
  return undefined;
}

export interface VmRun {
  /** The command's exit status (undefined: it never reported one). */
  status: number | undefined;
  /** What the machine wrote to its console. */
  console: string;
}

/** A folder the machine sees at the same path (any but /run, /dev/shm, /proc, /sys). */
export function vmSharedDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Boots the machine, runs `script` (shell text) in it and resolves once it powered off, or
 * after `timeoutMs` (the machine is killed; status undefined).
 */
export async function runInVm(
  script: string,
  opts: { dir: string; timeoutMs: number; memoryMb?: number },
): Promise<VmRun> {
  const k = kernel()!;
  const initrd = path.join(opts.dir, 'initrd.gz');
  execFileSync('sh', [path.join(HERE, 'make-initramfs.sh'), k.release, initrd]);
  const cmd = path.join(opts.dir, 'cmd.sh');
  fs.writeFileSync(cmd, script);
  // Software emulation: KVM's boot hangs in the nested VMs this project's machines are.
  const accel = ['-accel', 'tcg,thread=multi', '-cpu', 'max'];
  const args = [
    ...accel,
    ...['-m', String(opts.memoryMb ?? 2048), '-smp', '2', '-nographic', '-no-reboot'],
    ...['-kernel', k.image, '-initrd', initrd],
    ...['-append', `console=ttyS0 quiet panic=-1 pf_cmd=${cmd}`],
    '-virtfs',
    'local,path=/,mount_tag=hostroot,security_model=passthrough,id=hostroot,multidevs=remap',
  ];
  const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  qemu.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
  qemu.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const timer = setTimeout(() => qemu.kill('SIGKILL'), opts.timeoutMs);
  await new Promise<void>((resolve) => qemu.once('close', () => resolve()));
  clearTimeout(timer);
  // without the terminal escapes (ESC [ ... letter) QEMU's firmware writes
  const text = out
    .split('\u001b')
    .map((part, i) => (i === 0 ? part : part.replace(/^\[[0-9;?]*[A-Za-z]/, '')))
    .join('');
  const m = /pf-vm-exit (\d+)/.exec(text);
  return { status: m === null ? undefined : Number(m[1]), console: text };
}
