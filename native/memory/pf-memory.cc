/*
 * pf-memory: a Node-API addon with which the client gives memory back once it is at rest
 * (src/client/runtime/memory-trimmer.ts).
 *
 * Why (docs/performance.md, "Client memory"): after running 100,000 tasks the client held
 * - ~60 MB of free glibc heap: ZeroMQ's I/O thread allocates received messages in its own
 *   arena and V8 frees them from the main thread when their Buffers are collected, and big
 *   buffers raise glibc's dynamic mmap threshold, so freed blocks stay inside the heaps, where
 *   only malloc_trim(0) gives their pages back;
 * - 32 MB of V8 young generation: V8 grows the semi-spaces to their maximum under a high
 *   survival rate (100,000 long-lived Task objects go through them) and shrinks them only in a
 *   memory-reducing GC, which Node never asks for by itself.
 *
 * Built by scripts/build-native.sh into dist/native/pf-memory.node, against the headers of the
 * Node that builds it (<prefix>/include/node); src/lib/native-memory.ts loads it, and the client
 * does without it where it is not built.
 */
#include <malloc.h>
#include <node_api.h>
#include <v8.h>

namespace {

// trim(): malloc_trim(0); true if pages were given back to the kernel.
napi_value Trim(napi_env env, napi_callback_info) {
  napi_value result;
  if (napi_get_boolean(env, malloc_trim(0) != 0, &result) != napi_ok) return nullptr;
  return result;
}

// reduceHeap(): V8's LowMemoryNotification: full GCs that compact the old generation, shrink
// the young one and release unused pages. Synchronous: a pause of a full GC.
napi_value ReduceHeap(napi_env, napi_callback_info) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  if (isolate != nullptr) isolate->LowMemoryNotification();
  return nullptr;
}

bool SetNumber(napi_env env, napi_value object, const char *name, size_t value) {
  napi_value v;
  return napi_create_double(env, static_cast<double>(value), &v) == napi_ok &&
         napi_set_named_property(env, object, name, v) == napi_ok;
}

// info(): {heapBytes, mmapBytes, inUseBytes, freeBytes} of glibc's allocator (mallinfo2, all
// arenas): bytes its heaps took from the kernel, bytes of mmapped big blocks, bytes in use and
// free in the heaps (pages that malloc_trim gave back still count as free).
napi_value Info(napi_env env, napi_callback_info) {
  struct mallinfo2 m = mallinfo2();
  napi_value result;
  if (napi_create_object(env, &result) != napi_ok) return nullptr;
  if (!SetNumber(env, result, "heapBytes", m.arena) ||
      !SetNumber(env, result, "mmapBytes", m.hblkhd) ||
      !SetNumber(env, result, "inUseBytes", m.uordblks) ||
      !SetNumber(env, result, "freeBytes", m.fordblks)) {
    return nullptr;
  }
  return result;
}

bool Export(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &fn) == napi_ok &&
         napi_set_named_property(env, exports, name, fn) == napi_ok;
}

}  // namespace

NAPI_MODULE_INIT() {
  if (!Export(env, exports, "trim", Trim) || !Export(env, exports, "reduceHeap", ReduceHeap) ||
      !Export(env, exports, "info", Info)) {
    return nullptr;
  }
  return exports;
}
