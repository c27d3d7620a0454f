import { readdirSync } from 'node:fs';

/**
 * NVIDIA GPUs of this machine: one directory per GPU under /proc/driver/nvidia/gpus (what
 * `nvidia-smi -L` lists, without running a process); 0 without the driver.
 */
export function nvidiaGpus(dir = '/proc/driver/nvidia/gpus'): number {
  try {
    return readdirSync(dir).length;
  } catch {
    return 0;
  }
}
