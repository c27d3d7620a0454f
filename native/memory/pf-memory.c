/*
 * pf-memory: a Node-API addon that lets the client hand the C heap's free memory back to the
 * kernel (glibc's malloc_trim) and read what the C heap holds (mallinfo2).
 *
 * Why: a client that ran 100,000 tasks held ~60 MB of free glibc memory it never returned
 * (docs/performance.md, "Client memory"): ZeroMQ's I/O thread allocates received messages in
 * its own arena and V8 frees them from the main thread when their Buffers are collected, and
 * megabyte-sized buffers raise glibc's dynamic mmap threshold, so freed blocks stay inside the
 * heaps, where only malloc_trim(0) releases them (madvise of their whole free pages).
 *
 * Built by scripts/build-native.sh into dist/native/pf-memory.node; src/lib/native-memory.ts
 * loads it and does without it (no compiler, not glibc). The Node-API declarations below are
 * the few this file uses, written out so that no Node headers are needed (Debian's nodejs
 * package ships none); the symbols come from the node binary when the addon is loaded.
 * Node-API is a stable C ABI: napi_status is an int-sized enum whose napi_ok is 0.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status;
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
#define NAPI_OK 0
#define NAPI_AUTO_LENGTH ((size_t)-1)

extern napi_status napi_create_function(napi_env env, const char *name, size_t length,
                                        napi_callback cb, void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name,
                                           napi_value value);
extern napi_status napi_get_boolean(napi_env env, bool value, napi_value *result);
extern napi_status napi_create_object(napi_env env, napi_value *result);
extern napi_status napi_create_double(napi_env env, double value, napi_value *result);

/* trim(): malloc_trim(0); true if memory was returned to the kernel. */
static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result;
  if (napi_get_boolean(env, malloc_trim(0) != 0, &result) != NAPI_OK) return NULL;
  return result;
}

static bool set_number(napi_env env, napi_value object, const char *name, size_t value) {
  napi_value v;
  return napi_create_double(env, (double)value, &v) == NAPI_OK &&
         napi_set_named_property(env, object, name, v) == NAPI_OK;
}

/*
 * info(): {heapBytes, mmapBytes, inUseBytes, freeBytes} from mallinfo2 (all arenas): bytes
 * taken from the kernel by brk/arena heaps, by mmap for big blocks, the in-use and the free
 * bytes of the heaps.
 */
static napi_value info(napi_env env, napi_callback_info cbinfo) {
  (void)cbinfo;
  struct mallinfo2 m = mallinfo2();
  napi_value result;
  if (napi_create_object(env, &result) != NAPI_OK) return NULL;
  if (!set_number(env, result, "heapBytes", m.arena) ||
      !set_number(env, result, "mmapBytes", m.hblkhd) ||
      !set_number(env, result, "inUseBytes", m.uordblks) ||
      !set_number(env, result, "freeBytes", m.fordblks)) {
    return NULL;
  }
  return result;
}

static bool export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn) == NAPI_OK &&
         napi_set_named_property(env, exports, name, fn) == NAPI_OK;
}

/* Node-API's entry point for an addon without a module-registration macro. */
napi_value napi_register_module_v1(napi_env env, napi_value exports);
napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (!export_function(env, exports, "trim", trim) || !export_function(env, exports, "info", info)) {
    return NULL;
  }
  return exports;
}
