import * as path from 'node:path';
import { builtNative } from './dist-path';

/** What glibc's allocator holds, over all its arenas (mallinfo2), in bytes. */
export interface CHeapInfo {
  /** Taken from the kernel for the heaps (brk and arena heaps). */
  heapBytes: number;
  /** Taken by mmap for big blocks (given back as each is freed). */
  mmapBytes: number;
  /** In use in the heaps. */
  inUseBytes: number;
  /** Free in the heaps: what malloc_trim can give back, less partly used pages. */
  freeBytes: number;
}

/** native/memory/pf-memory.cc, built by scripts/build-native.sh. */
export interface NativeMemory {
  /** malloc_trim(0): gives the C heaps' free pages back to the kernel; true if any were. */
  trim(): boolean;
  /**
   * V8's LowMemoryNotification: full GCs that compact the old generation, shrink the young one
   * and release unused pages. Synchronous: a pause of a full GC (~70–150 ms at 20,000 tasks).
   */
  reduceHeap(): void;
  info(): CHeapInfo;
}

/**
 * Locates dist/native/pf-memory.node, seen from this module in dist/src/lib or, under ts-jest,
 * in src/lib. Undefined when it is not built.
 */
export function nativeMemoryPath(dir: string = __dirname): string | undefined {
  return builtNative('pf-memory.node', path.resolve(dir, '../..'));
}

let loaded: { addon: NativeMemory | undefined; why: string | undefined } | undefined;

/** The addon, loaded once; undefined when it is not built or cannot load here. */
export function nativeMemory(): NativeMemory | undefined {
  return load().addon;
}

/** Why nativeMemory() is undefined (for a log line), or undefined when it is loaded. */
export function nativeMemoryMissing(): string | undefined {
  return load().why;
}

function load(): { addon: NativeMemory | undefined; why: string | undefined } {
  if (loaded !== undefined) return loaded;
  const file = nativeMemoryPath();
  if (file === undefined) {
    loaded = {
      addon: undefined,
      why: "dist/native/pf-memory.node not built ('npm run build' says why)",
    };
    return loaded;
  }
  try {
    const module = { exports: {} as NativeMemory };
    process.dlopen(module, file);
    loaded = { addon: module.exports, why: undefined };
  } catch (e) {
    loaded = { addon: undefined, why: `${file} did not load: ${(e as Error).message}` };
  }
  return loaded;
}
