/*
 * pf-spawner: the native spawner helper of pilotfish's Executor (DESIGN.md §6).
 *
 * A small long-lived process that starts task processes for the agent, so the big Node process
 * never forks on its hot path. src/components/executor/spawner-pool.ts starts a few of these
 * (built by scripts/build-native.sh into dist/native/pf-spawner) and falls back to the Node
 * helper (spawner-main.ts) when this binary is not built. Both speak the same protocol and have
 * the same semantics; the integration tests run against both.
 *
 * Protocol: newline-delimited JSON, one object per line, UTF-8.
 *   in (stdin):
 *     {"op":"spawn","uid":S,"executable":S,"args":[S...],"env":{K:S...},"cwd":S,
 *      "stdoutPath":S,"stderrPath":S,"files"?:[{"path":S,"content":S}...],"killScope"?:"process",
 *      "cpus"?:S}
 *     {"op":"kill","uid":S,"signal":"SIGTERM"|"SIGKILL"}
 *   out (stdout):
 *     {"ev":"ready","pid":N}                            first, once
 *     {"ev":"started","uid":S,"pid":N}
 *     {"ev":"exited","uid":S,"exitCode":N|null,"signal":"SIGTERM"|...|null}
 *     {"ev":"failed","uid":S,"code":"ENOENT"|...,"message":S}   the task never ran
 *     {"ev":"error","message":S}                         a bad request, a failed kill
 * The reader is strict RFC 8259 JSON (string escapes including \uXXXX and surrogate pairs; a lone
 * surrogate becomes U+FFFD, as Node's UTF-8 encoding of it does; invalid UTF-8 is rejected).
 * Unknown members are ignored and a duplicated member's last value wins, as with JSON.parse.
 * Strings may hold any character, \u0000 included; a NUL in the executable, an argument, the
 * environment, cwd or a path fails the spawn (EINVAL), as Node's spawn refuses it. A line that is
 * not JSON, or not one of the requests above, gets an error event; the helper carries on.
 *
 * Semantics:
 *   - spawn: writes `files` (O_WRONLY|O_CREAT|O_TRUNC, 0600), opens stdoutPath and stderrPath the
 *     same way, then starts `executable args` (argv[0] = executable; looked up in PATH, the task's
 *     PATH if its env sets one, when it has no '/'; a file without a #! line runs under /bin/sh,
 *     as execvp does) in `cwd`, stdin /dev/null, with the helper's environment plus `env`, in a
 *     session and process group of its own (setsid), with every signal unblocked and at its
 *     default action. posix_spawn reports a failed exec as its error, so a missing executable is
 *     a failed event (ENOENT), never an exit 127. The helper (single-threaded) changes into `cwd`
 *     itself around posix_spawn and back: a bad cwd is told apart from a bad executable ("working
 *     directory 'X' does not exist"), and no posix_spawn_file_actions_addchdir_np is needed
 *     (glibc >= 2.29). Needs glibc >= 2.26 (POSIX_SPAWN_SETSID) and Linux (signalfd, /proc).
 *     With `cpus` (a cpulist, "0-3,8") the helper pins itself around posix_spawn, so the task
 *     starts pinned; a list that cannot be set is said on the task's stderr, the task unpinned.
 *   - kill: sends the signal to the task's process group, to every other process of its session
 *     (mpirun puts ranks in groups of their own) and to their descendants (a child that called
 *     setsid), all found in one scan of /proc made before any signal; or, for a task spawned with
 *     killScope 'process' (srun), to the task's process alone. The kills of one chunk of input
 *     are sent together. A uid that is not running is ignored. kill-session.ts does the same.
 *   - Exits come from SIGCHLD (signalfd), reaped with waitpid(-1, WNOHANG) loops: no polling.
 *   - Every event of one loop turn goes out in one write.
 *   - End: on stdin EOF, SIGTERM or SIGHUP, or when stdout is gone (EPIPE), the helper SIGKILLs
 *     every task it runs (each with its kill scope), reports their exits, waits for them all and
 *     exits 0, so no task outlives the agent. SIGINT is ignored: the agent decides.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/** Longest request line accepted; longer ones are dropped with an error event. */
#define MAX_LINE ((size_t)64 << 20)
/** How deep JSON may nest (requests need 3). */
#define MAX_DEPTH 32
/** How much of a bad line an error event quotes: UTF-16 units, as JavaScript counts. */
#define QUOTE_UNITS 200
#define READ_CHUNK ((size_t)64 << 10)

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                      */

static void die(const char *what) {
  /* The pool sees the helper die, fails its tasks and kills their sessions. */
  int e = errno;
  fprintf(stderr, "pf-spawner: %s: %s\n", what, strerror(e));
  _exit(70);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n == 0 ? 1 : n);
  if (p == NULL) die("out of memory");
  return p;
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n == 0 ? 1 : n);
  if (q == NULL) die("out of memory");
  return q;
}

typedef struct {
  char *p;
  size_t len, cap;
} Buf;

static void buf_reserve(Buf *b, size_t extra) {
  if (b->cap - b->len >= extra) return;
  size_t cap = b->cap < 256 ? 256 : b->cap;
  while (cap - b->len < extra) {
    if (cap > SIZE_MAX / 2) die("buffer too large");
    cap *= 2;
  }
  b->p = xrealloc(b->p, cap);
  b->cap = cap;
}

static void buf_add(Buf *b, const void *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_char(Buf *b, char c) { buf_add(b, &c, 1); }

static void buf_long(Buf *b, long v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "%ld", v);
  buf_add(b, tmp, (size_t)n);
}

/** Per-request allocations (JSON tree, argv, envp), all freed at once after the request. */
typedef struct Block {
  struct Block *next;
  size_t used, cap;
  max_align_t data[];
} Block;

static Block *arena;

static void *arena_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (arena == NULL || arena->cap - arena->used < n) {
    size_t cap = n > ((size_t)64 << 10) ? n : ((size_t)64 << 10);
    Block *b = xmalloc(sizeof(Block) + cap);
    b->next = arena;
    b->used = 0;
    b->cap = cap;
    arena = b;
  }
  void *p = (char *)arena->data + arena->used;
  arena->used += n;
  return p;
}

static void arena_reset(void) {
  /* Keep one block: most requests fit in it. */
  while (arena != NULL && arena->next != NULL) {
    Block *next = arena->next;
    free(arena);
    arena = next;
  }
  if (arena != NULL) arena->used = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Output: JSON events, written once per loop turn                                             */

static Buf out;
static bool stdout_broken;

static size_t utf8_len(const unsigned char *s, const unsigned char *end);

/** Appends `s` as a JSON string; invalid UTF-8 becomes U+FFFD. */
static void buf_json(Buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  buf_reserve(b, n + 2);
  buf_char(b, '"');
  while (p < end) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      buf_add(b, esc, 2);
      p++;
    } else if (c < 0x20) {
      char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      if (c == '\n') buf_add(b, "\\n", 2);
      else if (c == '\t') buf_add(b, "\\t", 2);
      else if (c == '\r') buf_add(b, "\\r", 2);
      else buf_add(b, esc, 6);
      p++;
    } else if (c < 0x80) {
      buf_char(b, (char)c);
      p++;
    } else {
      size_t k = utf8_len(p, end);
      if (k == 0) {
        buf_add(b, "\\ufffd", 6);
        p++;
      } else {
        buf_add(b, p, k);
        p += k;
      }
    }
  }
  buf_char(b, '"');
}

static void emit_ready(void) {
  buf_str(&out, "{\"ev\":\"ready\",\"pid\":");
  buf_long(&out, (long)getpid());
  buf_str(&out, "}\n");
}

static void emit_started(const char *uid, size_t ulen, pid_t pid) {
  buf_str(&out, "{\"ev\":\"started\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"pid\":");
  buf_long(&out, (long)pid);
  buf_str(&out, "}\n");
}

static void emit_exited(const char *uid, size_t ulen, int code, const char *signal) {
  buf_str(&out, "{\"ev\":\"exited\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"exitCode\":");
  if (signal == NULL) buf_long(&out, code);
  else buf_str(&out, "null");
  buf_str(&out, ",\"signal\":");
  if (signal == NULL) buf_str(&out, "null");
  else buf_json(&out, signal, strlen(signal));
  buf_str(&out, "}\n");
}

static void emit_failed(const char *uid, size_t ulen, const char *code, const Buf *message) {
  buf_str(&out, "{\"ev\":\"failed\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"code\":");
  buf_json(&out, code, strlen(code));
  buf_str(&out, ",\"message\":");
  buf_json(&out, message->p, message->len);
  buf_str(&out, "}\n");
}

static void emit_error(const char *message, size_t n) {
  buf_str(&out, "{\"ev\":\"error\",\"message\":");
  buf_json(&out, message, n);
  buf_str(&out, "}\n");
}

static void stop(void);

/** Writes every queued event; a reader gone (EPIPE) stops the helper. */
static void flush_output(void) {
  size_t off = 0;
  while (off < out.len && !stdout_broken) {
    ssize_t n = write(STDOUT_FILENO, out.p + off, out.len - off);
    if (n >= 0) {
      off += (size_t)n;
    } else if (errno != EINTR) {
      stdout_broken = true; /* EPIPE, or anything else: nobody reads us */
    }
  }
  out.len = 0;
  if (stdout_broken) stop();
}

/* ------------------------------------------------------------------------------------------ */
/* Errors and signals, named as Node names them                                               */

static const char *errno_name(int e) {
#define NAME(x) \
  case x: return #x;
  switch (e) {
    NAME(EPERM) NAME(ENOENT) NAME(ESRCH) NAME(EINTR) NAME(EIO) NAME(ENXIO) NAME(E2BIG)
    NAME(ENOEXEC) NAME(EBADF) NAME(ECHILD) NAME(EAGAIN) NAME(ENOMEM) NAME(EACCES) NAME(EFAULT)
    NAME(EBUSY) NAME(EEXIST) NAME(EXDEV) NAME(ENODEV) NAME(ENOTDIR) NAME(EISDIR) NAME(EINVAL)
    NAME(ENFILE) NAME(EMFILE) NAME(ETXTBSY) NAME(EFBIG) NAME(ENOSPC) NAME(ESPIPE) NAME(EROFS)
    NAME(EMLINK) NAME(EPIPE) NAME(ENAMETOOLONG) NAME(ELOOP) NAME(EOVERFLOW) NAME(ELIBBAD)
    NAME(EDQUOT) NAME(ESTALE) NAME(ETIMEDOUT) NAME(ENOSYS) NAME(EOPNOTSUPP)
  default: break;
  }
#undef NAME
  static char other[24];
  snprintf(other, sizeof other, "ERRNO_%d", e);
  return other;
}

/** The short text Node's helper gives for the common errors, else strerror in lower case. */
static void errno_text(Buf *b, int e) {
  const char *t = NULL;
  switch (e) {
  case ENOENT: t = "no such file or directory"; break;
  case EACCES: t = "permission denied"; break;
  case ENOEXEC: t = "not an executable format"; break;
  case ENOTDIR: t = "a path component is not a directory"; break;
  case EISDIR: t = "is a directory"; break;
  case E2BIG: t = "argument list too long"; break;
  case EMFILE: t = "too many open files"; break;
  case EAGAIN: t = "too many processes"; break;
  case ENOMEM: t = "out of memory"; break;
  default: break;
  }
  if (t != NULL) {
    buf_str(b, t);
    return;
  }
  const char *s = strerror(e);
  size_t start = b->len;
  buf_str(b, s);
  if (b->len > start) b->p[start] = (char)tolower((unsigned char)b->p[start]);
}

static const char *signal_name(int sig, char *tmp, size_t n) {
  switch (sig) {
  case SIGHUP: return "SIGHUP";
  case SIGINT: return "SIGINT";
  case SIGQUIT: return "SIGQUIT";
  case SIGILL: return "SIGILL";
  case SIGTRAP: return "SIGTRAP";
  case SIGABRT: return "SIGABRT";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGKILL: return "SIGKILL";
  case SIGUSR1: return "SIGUSR1";
  case SIGSEGV: return "SIGSEGV";
  case SIGUSR2: return "SIGUSR2";
  case SIGPIPE: return "SIGPIPE";
  case SIGALRM: return "SIGALRM";
  case SIGTERM: return "SIGTERM";
#ifdef SIGSTKFLT
  case SIGSTKFLT: return "SIGSTKFLT";
#endif
  case SIGCHLD: return "SIGCHLD";
  case SIGCONT: return "SIGCONT";
  case SIGSTOP: return "SIGSTOP";
  case SIGTSTP: return "SIGTSTP";
  case SIGTTIN: return "SIGTTIN";
  case SIGTTOU: return "SIGTTOU";
  case SIGURG: return "SIGURG";
  case SIGXCPU: return "SIGXCPU";
  case SIGXFSZ: return "SIGXFSZ";
  case SIGVTALRM: return "SIGVTALRM";
  case SIGPROF: return "SIGPROF";
  case SIGWINCH: return "SIGWINCH";
  case SIGIO: return "SIGIO";
#ifdef SIGPWR
  case SIGPWR: return "SIGPWR";
#endif
  case SIGSYS: return "SIGSYS";
  default: break;
  }
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) snprintf(tmp, n, "SIGRTMIN+%d", sig - SIGRTMIN);
  else snprintf(tmp, n, "SIG%d", sig);
  return tmp;
}

/* ------------------------------------------------------------------------------------------ */
/* JSON reader: strict, decodes strings in place (a decoded string never outgrows its source) */

enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct JVal {
  int type;
  /** J_STR: the decoded bytes, NUL-terminated (and possibly holding NULs: use len). */
  char *str;
  size_t len;
  /** A member of an object: its key. */
  char *key;
  size_t klen;
  /** J_ARR / J_OBJ: the first element and the count; elements are linked by next. */
  struct JVal *kid;
  size_t count;
  struct JVal *next;
} JVal;

typedef struct {
  unsigned char *p, *end;
  int depth;
} Parser;

/** Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, const unsigned char *end) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    need = 1;
  } else if (c >= 0xe0 && c <= 0xef) {
    need = 2;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f; /* no UTF-16 surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 3;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
  } else {
    return 0;
  }
  if ((size_t)(end - s) <= need) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i <= need; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
  }
  return need + 1;
}

static void skip_ws(Parser *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
    ps->p++;
  }
}

static int hex4(const unsigned char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = p[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

static unsigned char *put_utf8(unsigned char *w, uint32_t cp) {
  if (cp < 0x80) {
    *w++ = (unsigned char)cp;
  } else if (cp < 0x800) {
    *w++ = (unsigned char)(0xc0 | (cp >> 6));
    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *w++ = (unsigned char)(0xe0 | (cp >> 12));
    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
  } else {
    *w++ = (unsigned char)(0xf0 | (cp >> 18));
    *w++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
  }
  return w;
}

/** Parses a string at ps->p (on its opening quote), decoding it in place. */
static bool parse_string(Parser *ps, char **str, size_t *len) {
  unsigned char *r = ps->p + 1, *w = r, *end = ps->end;
  *str = (char *)w;
  for (;;) {
    if (r >= end) return false;
    unsigned char c = *r;
    if (c == '"') {
      *len = (size_t)(w - (unsigned char *)*str);
      *w = '\0'; /* w <= r: the closing quote or a byte before it */
      ps->p = r + 1;
      return true;
    }
    if (c < 0x20) return false;
    if (c >= 0x80) {
      size_t k = utf8_len(r, end);
      if (k == 0) return false;
      memmove(w, r, k);
      w += k;
      r += k;
      continue;
    }
    if (c != '\\') {
      *w++ = *r++;
      continue;
    }
    if (r + 1 >= end) return false;
    unsigned char e = r[1];
    r += 2;
    switch (e) {
    case '"': *w++ = '"'; break;
    case '\\': *w++ = '\\'; break;
    case '/': *w++ = '/'; break;
    case 'b': *w++ = '\b'; break;
    case 'f': *w++ = '\f'; break;
    case 'n': *w++ = '\n'; break;
    case 'r': *w++ = '\r'; break;
    case 't': *w++ = '\t'; break;
    case 'u': {
      if (end - r < 4) return false;
      int u = hex4(r);
      if (u < 0) return false;
      r += 4;
      uint32_t cp = (uint32_t)u;
      if (cp >= 0xd800 && cp <= 0xdbff) {
        int lo = (end - r >= 6 && r[0] == '\\' && r[1] == 'u') ? hex4(r + 2) : -1;
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
          r += 6;
        } else {
          cp = 0xfffd; /* a lone high surrogate */
        }
      } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        cp = 0xfffd; /* a lone low surrogate */
      }
      w = put_utf8(w, cp);
      break;
    }
    default:
      return false;
    }
  }
}

static bool parse_number(Parser *ps) {
  unsigned char *p = ps->p, *end = ps->end;
  if (p < end && *p == '-') p++;
  if (p >= end) return false;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && isdigit(*p)) p++;
  } else {
    return false;
  }
  if (p < end && *p == '.') {
    p++;
    if (p >= end || !isdigit(*p)) return false;
    while (p < end && isdigit(*p)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || !isdigit(*p)) return false;
    while (p < end && isdigit(*p)) p++;
  }
  ps->p = p;
  return true;
}

static bool literal(Parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return false;
  ps->p += n;
  return true;
}

static JVal *parse_value(Parser *ps) {
  skip_ws(ps);
  if (ps->p >= ps->end) return NULL;
  JVal *v = arena_alloc(sizeof *v);
  memset(v, 0, sizeof *v);
  unsigned char c = *ps->p;
  if (c == '"') {
    v->type = J_STR;
    return parse_string(ps, &v->str, &v->len) ? v : NULL;
  }
  if (c == '{' || c == '[') {
    bool obj = c == '{';
    v->type = obj ? J_OBJ : J_ARR;
    if (++ps->depth > MAX_DEPTH) return NULL;
    ps->p++;
    skip_ws(ps);
    JVal **tail = &v->kid;
    if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
      ps->p++;
      ps->depth--;
      return v;
    }
    for (;;) {
      char *key = NULL;
      size_t klen = 0;
      if (obj) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"' || !parse_string(ps, &key, &klen)) return NULL;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return NULL;
        ps->p++;
      }
      JVal *kid = parse_value(ps);
      if (kid == NULL) return NULL;
      kid->key = key;
      kid->klen = klen;
      *tail = kid;
      tail = &kid->next;
      v->count++;
      skip_ws(ps);
      if (ps->p >= ps->end) return NULL;
      if (*ps->p == ',') {
        ps->p++;
        continue;
      }
      if (*ps->p != (obj ? '}' : ']')) return NULL;
      ps->p++;
      ps->depth--;
      return v;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    v->type = J_NUM;
    return parse_number(ps) ? v : NULL;
  }
  if (literal(ps, "true")) v->type = J_TRUE;
  else if (literal(ps, "false")) v->type = J_FALSE;
  else if (literal(ps, "null")) v->type = J_NULL;
  else return NULL;
  return v;
}

/** Parses a whole line; NULL when it is not exactly one JSON value. Decodes in place. */
static JVal *parse_json(char *line, size_t n) {
  Parser ps = {(unsigned char *)line, (unsigned char *)line + n, 0};
  JVal *v = parse_value(&ps);
  if (v == NULL) return NULL;
  skip_ws(&ps);
  return ps.p == ps.end ? v : NULL;
}

/** The member `key` of an object (the last one, as JSON.parse keeps), or NULL. */
static JVal *member(const JVal *obj, const char *key) {
  size_t n = strlen(key);
  JVal *found = NULL;
  for (JVal *m = obj->kid; m != NULL; m = m->next) {
    if (m->klen == n && memcmp(m->key, key, n) == 0) found = m;
  }
  return found;
}

static bool is_str(const JVal *v) { return v != NULL && v->type == J_STR; }

static bool str_is(const JVal *v, const char *s) {
  return is_str(v) && v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Tasks: by uid (kills) and by pid (exits)                                                    */

typedef struct Task {
  char *uid;
  size_t ulen;
  pid_t pid;
  bool process_only;
  struct Task *next_uid, *next_pid;
} Task;

static Task **by_uid, **by_pid;
static size_t n_buckets, n_tasks;

static size_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return (size_t)h;
}

static size_t hash_pid(pid_t pid) { return (size_t)((uint32_t)pid * 2654435761U); }

static void tasks_grow(void) {
  size_t nb = n_buckets == 0 ? 256 : n_buckets * 2;
  Task **bu = xmalloc(nb * sizeof *bu), **bp = xmalloc(nb * sizeof *bp);
  memset(bu, 0, nb * sizeof *bu);
  memset(bp, 0, nb * sizeof *bp);
  for (size_t i = 0; i < n_buckets; i++) {
    for (Task *t = by_uid[i], *next; t != NULL; t = next) {
      next = t->next_uid;
      size_t j = hash_bytes(t->uid, t->ulen) & (nb - 1);
      t->next_uid = bu[j];
      bu[j] = t;
    }
    for (Task *t = by_pid[i], *next; t != NULL; t = next) {
      next = t->next_pid;
      size_t j = hash_pid(t->pid) & (nb - 1);
      t->next_pid = bp[j];
      bp[j] = t;
    }
  }
  free(by_uid);
  free(by_pid);
  by_uid = bu;
  by_pid = bp;
  n_buckets = nb;
}

static Task *task_by_uid(const char *uid, size_t n) {
  if (n_buckets == 0) return NULL;
  for (Task *t = by_uid[hash_bytes(uid, n) & (n_buckets - 1)]; t != NULL; t = t->next_uid) {
    if (t->ulen == n && memcmp(t->uid, uid, n) == 0) return t;
  }
  return NULL;
}

static Task *task_by_pid(pid_t pid) {
  if (n_buckets == 0) return NULL;
  for (Task *t = by_pid[hash_pid(pid) & (n_buckets - 1)]; t != NULL; t = t->next_pid) {
    if (t->pid == pid) return t;
  }
  return NULL;
}

static void task_add(const char *uid, size_t n, pid_t pid, bool process_only) {
  if (n_tasks >= n_buckets) tasks_grow();
  Task *t = xmalloc(sizeof *t);
  t->uid = xmalloc(n + 1);
  memcpy(t->uid, uid, n);
  t->uid[n] = '\0';
  t->ulen = n;
  t->pid = pid;
  t->process_only = process_only;
  size_t i = hash_bytes(uid, n) & (n_buckets - 1), j = hash_pid(pid) & (n_buckets - 1);
  t->next_uid = by_uid[i];
  by_uid[i] = t;
  t->next_pid = by_pid[j];
  by_pid[j] = t;
  n_tasks++;
}

static void task_remove(Task *t) {
  Task **pp = &by_uid[hash_bytes(t->uid, t->ulen) & (n_buckets - 1)];
  while (*pp != t) pp = &(*pp)->next_uid;
  *pp = t->next_uid;
  pp = &by_pid[hash_pid(t->pid) & (n_buckets - 1)];
  while (*pp != t) pp = &(*pp)->next_pid;
  *pp = t->next_pid;
  free(t->uid);
  free(t);
  n_tasks--;
}

/* ------------------------------------------------------------------------------------------ */
/* Kills, batched per chunk of input                                                           */

typedef struct {
  pid_t *v;
  size_t n, cap;
} Pids;

static void pids_add(Pids *p, pid_t pid) {
  if (p->n == p->cap) {
    p->cap = p->cap == 0 ? 16 : p->cap * 2;
    p->v = xrealloc(p->v, p->cap * sizeof *p->v);
  }
  p->v[p->n++] = pid;
}

/** [0] SIGTERM, [1] SIGKILL. */
static Pids kill_sessions[2], kill_processes[2];
/** Other processes of the killed sessions and their descendants (negated: SIGTERM). */
static Pids kill_members;

static void queue_kill(const Task *t, int sig) {
  int i = sig == SIGKILL ? 1 : 0;
  pids_add(t->process_only ? &kill_processes[i] : &kill_sessions[i], t->pid);
}

static void signal_pid(pid_t pid, int sig) {
  if (kill(pid, sig) == 0 || errno == ESRCH) return;
  char tmp[16];
  Buf m = {0};
  buf_str(&m, "kill ");
  buf_str(&m, signal_name(sig, tmp, sizeof tmp));
  buf_char(&m, ' ');
  buf_long(&m, (long)pid);
  buf_str(&m, ": ");
  buf_str(&m, errno_name(errno));
  emit_error(m.p, m.len);
  free(m.p);
}

static int cmp_pid(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return (x > y) - (x < y);
}

static bool has_pid(const Pids *p, pid_t pid) {
  return p->n > 0 && bsearch(&pid, p->v, p->n, sizeof *p->v, cmp_pid) != NULL;
}

typedef struct {
  pid_t pid, ppid, sid;
} Proc;

static int cmp_proc(const void *a, const void *b) {
  return cmp_pid(&((const Proc *)a)->pid, &((const Proc *)b)->pid);
}

/** Reads the parent and session of process `name` (a /proc entry); false if it is gone. */
static bool read_proc(int procfd, const char *name, Proc *pr) {
  char path[64], stat[512];
  snprintf(path, sizeof path, "%s/stat", name);
  int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false; /* exited meanwhile */
  ssize_t n;
  do n = read(fd, stat, sizeof stat - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return false;
  stat[n] = '\0';
  /* "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'. */
  char *p = strrchr(stat, ')');
  char state;
  int ppid, pgrp, session;
  if (p == NULL || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4) {
    return false;
  }
  pr->ppid = (pid_t)ppid;
  pr->sid = (pid_t)session;
  return true;
}

static Proc *procs;
static size_t n_procs, cap_procs;

/** Every process, sorted by pid; false without /proc. */
static bool scan_procs(void) {
  DIR *d = opendir("/proc");
  if (d == NULL) return false;
  n_procs = 0;
  int procfd = dirfd(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
    char *endp;
    long pid = strtol(de->d_name, &endp, 10);
    if (*endp != '\0') continue;
    Proc pr = {(pid_t)pid, 0, 0};
    if (!read_proc(procfd, de->d_name, &pr)) continue;
    if (n_procs == cap_procs) {
      cap_procs = cap_procs == 0 ? 1024 : cap_procs * 2;
      procs = xrealloc(procs, cap_procs * sizeof *procs);
    }
    procs[n_procs++] = pr;
  }
  closedir(d);
  if (n_procs > 1) qsort(procs, n_procs, sizeof *procs, cmp_proc);
  return true;
}

static const Proc *find_proc(pid_t pid) {
  if (n_procs == 0) return NULL;
  Proc key = {pid, 0, 0};
  return bsearch(&key, procs, n_procs, sizeof *procs, cmp_proc);
}

/**
 * The signal for a process that is not a leader: the strongest asked for a session it is in,
 * or that one of its ancestors is in (a child that called setsid stays a descendant); 0: none.
 */
static int signal_for(const Proc *pr) {
  int sig = 0;
  for (int depth = 0; pr != NULL && pr->pid > 1 && depth < 256; depth++) {
    if (has_pid(&kill_sessions[1], pr->sid) || has_pid(&kill_sessions[1], pr->pid)) {
      return SIGKILL;
    }
    if (has_pid(&kill_sessions[0], pr->sid) || has_pid(&kill_sessions[0], pr->pid)) {
      sig = SIGTERM;
    }
    pr = find_proc(pr->ppid);
  }
  return sig;
}

/**
 * Sends the queued kills: to the processes (killScope 'process'), to the groups of the session
 * leaders and to every other process of their sessions (mpirun's ranks have groups of their own)
 * and their descendants, found in one scan of /proc made before any signal, while a killed
 * parent has not yet left its children to init.
 */
static void flush_kills(void) {
  static const int sigs[2] = {SIGTERM, SIGKILL};
  bool scanned_procs = false;
  if (kill_sessions[0].n + kill_sessions[1].n > 0) {
    for (int i = 0; i < 2; i++) {
      if (kill_sessions[i].n > 1) {
        qsort(kill_sessions[i].v, kill_sessions[i].n, sizeof(pid_t), cmp_pid);
      }
    }
    scanned_procs = scan_procs(); /* no /proc: the group kills are all we can do */
  }
  Pids *members = &kill_members;
  members->n = 0;
  for (size_t k = 0; scanned_procs && k < n_procs; k++) {
    pid_t pid = procs[k].pid;
    if (has_pid(&kill_sessions[0], pid) || has_pid(&kill_sessions[1], pid)) {
      continue; /* a leader: its group is signaled */
    }
    int sig = signal_for(&procs[k]);
    if (sig != 0) pids_add(members, sig == SIGKILL ? pid : -pid); /* sign: which signal */
  }
  for (int i = 0; i < 2; i++) {
    for (size_t k = 0; k < kill_processes[i].n; k++) signal_pid(kill_processes[i].v[k], sigs[i]);
    for (size_t k = 0; k < kill_sessions[i].n; k++) signal_pid(-kill_sessions[i].v[k], sigs[i]);
    kill_processes[i].n = 0;
    kill_sessions[i].n = 0;
  }
  for (size_t k = 0; k < members->n; k++) {
    pid_t v = members->v[k];
    signal_pid(v > 0 ? v : -v, v > 0 ? SIGKILL : SIGTERM);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Spawning                                                                                    */

static posix_spawnattr_t spawn_attr;
static int devnull = -1;
/** The helper's own working directory, to come back to after each spawn. */
static int home_dir = -1;
/** The helper's own CPU affinity, restored after each pinned spawn. */
static cpu_set_t home_cpus;
static const char *default_path;
static bool stopping;

/** Fails a spawn: `what` and a quoted path, then ": " and the errno text. */
static void fail_path(const JVal *uid, int e, const char *what, const char *path, size_t plen,
                      const char *after) {
  Buf m = {0};
  buf_str(&m, what);
  buf_str(&m, " '");
  buf_add(&m, path, plen);
  buf_str(&m, "'");
  buf_str(&m, after);
  errno_text(&m, e);
  emit_failed(uid->str, uid->len, errno_name(e), &m);
  free(m.p);
}

static void fail_text(const JVal *uid, const char *code, const char *text) {
  Buf m = {0};
  buf_str(&m, text);
  emit_failed(uid->str, uid->len, code, &m);
  free(m.p);
}

static bool has_nul(const JVal *s) { return memchr(s->str, '\0', s->len) != NULL; }

/** Fails the spawn (EINVAL) when a string the kernel gets holds a NUL; true if it did. */
static bool refuse_nul(const JVal *uid, const JVal *s, const char *what, long index) {
  if (!has_nul(s)) return false;
  Buf m = {0};
  buf_str(&m, what);
  if (index >= 0) {
    buf_char(&m, '[');
    buf_long(&m, index);
    buf_char(&m, ']');
  }
  buf_str(&m, " contains a NUL byte");
  emit_failed(uid->str, uid->len, "EINVAL", &m);
  free(m.p);
  return true;
}

static int open_output(const char *path) {
  int fd;
  do fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  while (fd < 0 && errno == EINTR);
  return fd;
}

/** Writes a launch file; 0 or an errno. */
static int write_file(const char *path, const char *content, size_t n) {
  int fd = open_output(path);
  if (fd < 0) return errno;
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, content + off, n - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return e;
    }
    off += (size_t)w;
  }
  return close(fd) == 0 || errno == EINTR ? 0 : errno;
}

/**
 * Finds `exe` (no '/') in PATH as execvp would, from the task's cwd (the helper is in it now):
 * the first entry that is an executable file. Returns the path to exec (arena), or NULL with
 * *err = ENOENT, or EACCES when a match was found that cannot be executed.
 */
static const char *search_path(const char *exe, const char *path, int *err) {
  size_t elen = strlen(exe);
  bool denied = false;
  if (elen == 0) {
    *err = ENOENT;
    return NULL;
  }
  for (const char *p = path;; p++) {
    const char *colon = strchr(p, ':');
    size_t dlen = colon != NULL ? (size_t)(colon - p) : strlen(p);
    char *cand = arena_alloc(dlen + elen + 3);
    if (dlen == 0) snprintf(cand, dlen + elen + 3, "./%s", exe); /* "" is the cwd */
    else snprintf(cand, dlen + elen + 3, "%.*s/%s", (int)dlen, p, exe);
    struct stat st;
    if (stat(cand, &st) == 0) {
      if (S_ISREG(st.st_mode) && access(cand, X_OK) == 0) return cand;
      denied = true;
    } else if (errno == EACCES) {
      denied = true;
    }
    if (colon == NULL) break;
    p = colon;
  }
  *err = denied ? EACCES : ENOENT;
  return NULL;
}

/** The helper's environment without the keys `env` sets, then `env` (last duplicate wins). */
static char **build_envp(const JVal *env) {
  size_t n_env = 0;
  while (environ[n_env] != NULL) n_env++;
  char **envp = arena_alloc((n_env + env->count + 1) * sizeof *envp);
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++) {
    const char *e = environ[i], *eq = strchr(e, '=');
    size_t klen = eq != NULL ? (size_t)(eq - e) : strlen(e);
    bool overridden = false;
    for (const JVal *m = env->kid; m != NULL && !overridden; m = m->next) {
      overridden = m->klen == klen && memcmp(m->key, e, klen) == 0;
    }
    if (!overridden) envp[k++] = environ[i];
  }
  for (const JVal *m = env->kid; m != NULL; m = m->next) {
    bool later = false;
    for (const JVal *l = m->next; l != NULL && !later; l = l->next) {
      later = l->klen == m->klen && memcmp(l->key, m->key, m->klen) == 0;
    }
    if (later) continue;
    char *kv = arena_alloc(m->klen + m->len + 2);
    memcpy(kv, m->key, m->klen);
    kv[m->klen] = '=';
    memcpy(kv + m->klen + 1, m->str, m->len + 1);
    envp[k++] = kv;
  }
  envp[k] = NULL;
  return envp;
}

/** posix_spawn (from the task's cwd) with stdout/stderr fds, in a new session; 0 or an errno. */
static int spawn_with(pid_t *pid, const char *file, char **argv, char **envp, int out_fd,
                      int err_fd) {
  posix_spawn_file_actions_t fa;
  int e = posix_spawn_file_actions_init(&fa);
  if (e != 0) return e;
  if ((e = posix_spawn_file_actions_adddup2(&fa, devnull, STDIN_FILENO)) == 0 &&
      (e = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO)) == 0 &&
      (e = posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO)) == 0) {
    e = posix_spawn(pid, file, &fa, &spawn_attr, argv, envp);
  }
  posix_spawn_file_actions_destroy(&fa);
  return e;
}

/**
 * Starts the task from its cwd. The helper itself changes into the cwd around posix_spawn (it
 * is single-threaded): portable to C libraries without posix_spawn_file_actions_addchdir_np, and
 * a bad cwd is told apart from a bad executable. 0, or an errno with *cwd_failed set.
 */
static int spawn_task(pid_t *pid, const JVal *exe, char **argv, const JVal *env, const char *cwd,
                      int out_fd, int err_fd, bool *cwd_failed) {
  *cwd_failed = false;
  if (chdir(cwd) != 0) {
    *cwd_failed = true;
    return errno;
  }
  char **envp = build_envp(env);
  const char *file = exe->str;
  int e = 0;
  if (strchr(file, '/') == NULL) {
    const char *path = default_path;
    for (const JVal *m = env->kid; m != NULL; m = m->next) {
      if (m->klen == 4 && memcmp(m->key, "PATH", 4) == 0) path = m->str;
    }
    file = search_path(exe->str, path, &e);
  }
  if (file != NULL) e = spawn_with(pid, file, argv, envp, out_fd, err_fd);
  if (e == ENOEXEC) {
    /* No #! line: run it as a shell script, as execvp does. */
    size_t argc = 0;
    while (argv[argc] != NULL) argc++;
    char **sh = arena_alloc((argc + 2) * sizeof *sh);
    sh[0] = (char *)"/bin/sh";
    sh[1] = (char *)file;
    memcpy(sh + 2, argv + 1, argc * sizeof *sh); /* argv[1..], NULL */
    e = spawn_with(pid, "/bin/sh", sh, envp, out_fd, err_fd);
  }
  if (fchdir(home_dir) != 0) die("cannot return to the helper's directory");
  return e;
}

/** A decimal number below CPU_SETSIZE at *p, moving *p past it; false when there is none. */
static bool cpu_number(const char **p, const char *end, unsigned long *n) {
  if (*p == end || !isdigit((unsigned char)**p)) return false;
  *n = 0;
  while (*p < end && isdigit((unsigned char)**p)) {
    *n = *n * 10 + (unsigned long)(*(*p)++ - '0');
    if (*n >= CPU_SETSIZE) return false;
  }
  return true;
}

/** A cpulist ("0-3,8") into *set; false when malformed or empty. */
static bool parse_cpulist(const JVal *v, cpu_set_t *set) {
  const char *p = v->str, *end = v->str + v->len;
  CPU_ZERO(set);
  while (p < end) {
    unsigned long lo, hi;
    if (!cpu_number(&p, end, &lo)) return false;
    hi = lo;
    if (p < end && *p == '-' && (++p, !cpu_number(&p, end, &hi))) return false;
    if (lo > hi || (p < end && *p++ != ',')) return false;
    for (unsigned long c = lo; c <= hi; c++) CPU_SET(c, set);
  }
  return CPU_COUNT(set) > 0;
}

/** A working directory that cannot be entered: "working directory 'X' does not exist", ... */
static void fail_cwd(const JVal *uid, int e, const char *cwd, size_t cwdlen) {
  if (e == ENOENT) {
    Buf m = {0};
    buf_str(&m, "working directory '");
    buf_add(&m, cwd, cwdlen);
    buf_str(&m, "' does not exist");
    emit_failed(uid->str, uid->len, "ENOENT", &m);
    free(m.p);
  } else {
    fail_path(uid, e, "cannot enter the working directory", cwd, cwdlen, ": ");
  }
}

static void do_spawn(const JVal *req) {
  const JVal *uid = member(req, "uid"), *exe = member(req, "executable"),
             *args = member(req, "args"), *env = member(req, "env"), *cwd = member(req, "cwd"),
             *so = member(req, "stdoutPath"), *se = member(req, "stderrPath"),
             *files = member(req, "files"), *scope = member(req, "killScope");

  if (task_by_uid(uid->str, uid->len) != NULL) {
    Buf m = {0};
    buf_str(&m, "task '");
    buf_add(&m, uid->str, uid->len);
    buf_str(&m, "' is already running");
    emit_failed(uid->str, uid->len, "EEXIST", &m);
    free(m.p);
    return;
  }
  if (refuse_nul(uid, exe, "executable", -1)) return;
  long i = 0;
  for (const JVal *a = args->kid; a != NULL; a = a->next, i++) {
    if (refuse_nul(uid, a, "args", i)) return;
  }
  for (const JVal *m = env->kid; m != NULL; m = m->next) {
    if (memchr(m->key, '\0', m->klen) != NULL || has_nul(m)) {
      fail_text(uid, "EINVAL", "env contains a NUL byte");
      return;
    }
  }
  if (refuse_nul(uid, cwd, "cwd", -1) || refuse_nul(uid, so, "stdoutPath", -1) ||
      refuse_nul(uid, se, "stderrPath", -1)) {
    return;
  }
  i = 0;
  for (const JVal *f = files == NULL ? NULL : files->kid; f != NULL; f = f->next, i++) {
    if (refuse_nul(uid, member(f, "path"), "files.path", i)) return;
  }

  for (const JVal *f = files == NULL ? NULL : files->kid; f != NULL; f = f->next) {
    const JVal *path = member(f, "path"), *content = member(f, "content");
    int e = write_file(path->str, content->str, content->len);
    if (e != 0) {
      fail_path(uid, e, "cannot write", path->str, path->len, ": ");
      return;
    }
  }
  int fds[2] = {-1, -1};
  const JVal *outs[2] = {so, se};
  for (int k = 0; k < 2; k++) {
    fds[k] = open_output(outs[k]->str);
    if (fds[k] < 0) {
      int e = errno;
      fail_path(uid, e, "cannot open", outs[k]->str, outs[k]->len, " for writing: ");
      if (k == 1) close(fds[0]);
      return;
    }
  }

  char **argv = arena_alloc((args->count + 2) * sizeof *argv);
  argv[0] = exe->str;
  i = 1;
  for (const JVal *a = args->kid; a != NULL; a = a->next) argv[i++] = a->str;
  argv[i] = NULL;
  pid_t pid = -1;
  bool cwd_failed;
  /* `cpus` (fork): the helper pins itself around posix_spawn and the child inherits the mask */
  const JVal *cpus = member(req, "cpus");
  cpu_set_t pin;
  bool pinned = false;
  if (is_str(cpus)) {
    pinned = parse_cpulist(cpus, &pin) && sched_setaffinity(0, sizeof pin, &pin) == 0;
    if (!pinned) dprintf(fds[1], "pf-spawner: runs unpinned: cannot pin to CPUs %s\n", cpus->str);
  }
  int e = spawn_task(&pid, exe, argv, env, cwd->str, fds[0], fds[1], &cwd_failed);
  if (pinned && sched_setaffinity(0, sizeof home_cpus, &home_cpus) != 0) die("sched_setaffinity");
  close(fds[0]);
  close(fds[1]);
  if (e != 0) {
    if (cwd_failed) {
      fail_cwd(uid, e, cwd->str, cwd->len);
    } else {
      Buf m = {0};
      errno_text(&m, e);
      emit_failed(uid->str, uid->len, errno_name(e), &m);
      free(m.p);
    }
    return;
  }
  task_add(uid->str, uid->len, pid, str_is(scope, "process"));
  emit_started(uid->str, uid->len, pid);
}

/* ------------------------------------------------------------------------------------------ */
/* Requests                                                                                    */

static bool all_strings(const JVal *arr) {
  for (const JVal *a = arr->kid; a != NULL; a = a->next) {
    if (a->type != J_STR) return false;
  }
  return true;
}

static bool valid_spawn(const JVal *m) {
  const JVal *args = member(m, "args"), *env = member(m, "env"), *files = member(m, "files"),
             *scope = member(m, "killScope");
  if (!is_str(member(m, "uid")) || !is_str(member(m, "executable")) ||
      !is_str(member(m, "cwd")) || !is_str(member(m, "stdoutPath")) ||
      !is_str(member(m, "stderrPath"))) {
    return false;
  }
  if (args == NULL || args->type != J_ARR || !all_strings(args)) return false;
  if (env == NULL || env->type != J_OBJ || !all_strings(env)) return false;
  if (scope != NULL && !str_is(scope, "process")) return false;
  if (files != NULL) {
    if (files->type != J_ARR) return false;
    for (const JVal *f = files->kid; f != NULL; f = f->next) {
      if (f->type != J_OBJ || !is_str(member(f, "path")) || !is_str(member(f, "content"))) {
        return false;
      }
    }
  }
  return true;
}

/** Reports a bad line, quoting its first QUOTE_UNITS UTF-16 units, as Node's slice(0, 200). */
static void bad_line(const char *why, const char *line, size_t n) {
  const unsigned char *p = (const unsigned char *)line, *end = p + n;
  size_t units = 0;
  while (p < end) {
    size_t k = utf8_len(p, end);
    size_t u = k == 4 ? 2 : 1; /* outside the BMP: a surrogate pair; an invalid byte: U+FFFD */
    if (units + u > QUOTE_UNITS) break;
    units += u;
    p += k == 0 ? 1 : k;
  }
  Buf m = {0};
  buf_str(&m, why);
  buf_add(&m, line, (size_t)(p - (const unsigned char *)line));
  emit_error(m.p, m.len);
  free(m.p);
}

static void handle_line(char *line, size_t n) {
  size_t a = 0;
  while (a < n && isspace((unsigned char)line[a])) a++;
  if (a == n) return;
  /* Quote the line as it came: parsing decodes it in place. */
  char quote[4 * QUOTE_UNITS];
  size_t qn = n < sizeof quote ? n : sizeof quote;
  memcpy(quote, line, qn);
  JVal *m = parse_json(line, n);
  if (m == NULL) {
    bad_line("not JSON: ", quote, qn);
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "spawn") && valid_spawn(m)) {
    do_spawn(m);
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "kill") &&
             is_str(member(m, "uid")) &&
             (str_is(member(m, "signal"), "SIGTERM") || str_is(member(m, "signal"), "SIGKILL"))) {
    const JVal *uid = member(m, "uid");
    Task *t = task_by_uid(uid->str, uid->len);
    if (t != NULL) queue_kill(t, str_is(member(m, "signal"), "SIGKILL") ? SIGKILL : SIGTERM);
  } else {
    bad_line("bad request: ", quote, qn);
  }
  arena_reset();
}

/* ------------------------------------------------------------------------------------------ */
/* Input                                                                                       */

static Buf in;
/** Bytes of `in` already searched for a newline. */
static size_t scanned;
/** Dropping the rest of a line longer than MAX_LINE. */
static bool discarding;

static void handle_input(void) {
  buf_reserve(&in, READ_CHUNK);
  ssize_t n = read(STDIN_FILENO, in.p + in.len, in.cap - in.len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    stop(); /* EOF or a broken pipe: the agent is gone */
    return;
  }
  in.len += (size_t)n;
  size_t start = 0;
  for (;;) {
    char *nl = memchr(in.p + scanned, '\n', in.len - scanned);
    if (nl == NULL) break;
    size_t end = (size_t)(nl - in.p);
    if (discarding) discarding = false;
    else handle_line(in.p + start, end - start);
    start = end + 1;
    scanned = start;
  }
  memmove(in.p, in.p + start, in.len - start);
  in.len -= start;
  scanned = in.len;
  if (!discarding && in.len > MAX_LINE) {
    char msg[96];
    int k = snprintf(msg, sizeof msg, "request line longer than %zu bytes: dropped", MAX_LINE);
    emit_error(msg, (size_t)k);
    discarding = true;
  }
  if (discarding) {
    in.len = 0; /* the rest of the line, up to its newline, is dropped as it comes */
    scanned = 0;
  }
  if (in.cap > ((size_t)4 << 20) && in.len < READ_CHUNK) {
    in.p = xrealloc(in.p, 2 * READ_CHUNK); /* give back the room a huge line took */
    in.cap = 2 * READ_CHUNK;
  }
  flush_kills();
}

/* ------------------------------------------------------------------------------------------ */
/* Exits, stop, main loop                                                                      */

static void reap(void) {
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    Task *t = task_by_pid(pid);
    if (t == NULL) continue;
    char tmp[16];
    if (WIFSIGNALED(st)) {
      emit_exited(t->uid, t->ulen, 0, signal_name(WTERMSIG(st), tmp, sizeof tmp));
    } else {
      emit_exited(t->uid, t->ulen, WEXITSTATUS(st), NULL);
    }
    task_remove(t);
  }
}

/** Kills every task (each with its kill scope) and stops reading; main exits once all exited. */
static void stop(void) {
  if (stopping) return;
  stopping = true;
  for (size_t i = 0; i < n_buckets; i++) {
    for (Task *t = by_uid[i]; t != NULL; t = t->next_uid) queue_kill(t, SIGKILL);
  }
  flush_kills();
}

static void ensure_std_fds(void) {
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (n >= 0 && n != fd) {
        dup2(n, fd);
        close(n);
      }
    }
  }
}

int main(void) {
  ensure_std_fds();
  default_path = getenv("PATH");
  if (default_path == NULL) default_path = "/bin:/usr/bin";

  /* Tasks get every signal at its default action: those ignored here (SIGINT, SIGPIPE, and
     whatever our parent left ignored) are reset in the child; handlers do not survive exec. */
  sigset_t dflt;
  sigemptyset(&dflt);
  for (int sig = 1; sig < SIGRTMIN; sig++) {
    struct sigaction sa;
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) sigaddset(&dflt, sig);
  }
  sigaddset(&dflt, SIGINT);
  sigaddset(&dflt, SIGPIPE);
  signal(SIGINT, SIG_IGN);  /* Ctrl-C reaches the whole group: the agent decides */
  signal(SIGPIPE, SIG_IGN); /* a gone reader is EPIPE from write, then stop */

  sigset_t mask, empty;
  sigemptyset(&mask);
  sigemptyset(&empty);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) die("sigprocmask");
  int sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd < 0) die("signalfd");

  if (posix_spawnattr_init(&spawn_attr) != 0 ||
      posix_spawnattr_setflags(&spawn_attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF) != 0 ||
      posix_spawnattr_setsigmask(&spawn_attr, &empty) != 0 ||
      posix_spawnattr_setsigdefault(&spawn_attr, &dflt) != 0) {
    die("posix_spawnattr");
  }
  devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) die("/dev/null");
  home_dir = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (home_dir < 0) die("cannot open the working directory");
  if (sched_getaffinity(0, sizeof home_cpus, &home_cpus) != 0) die("sched_getaffinity");

  emit_ready();
  flush_output();

  while (!(stopping && n_tasks == 0)) {
    struct pollfd fds[2] = {{sigfd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    int r = poll(fds, stopping ? 1 : 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[0].revents != 0) {
      struct signalfd_siginfo si[16];
      ssize_t n;
      bool child = false;
      while ((n = read(sigfd, si, sizeof si)) > 0) {
        for (size_t k = 0; k < (size_t)n / sizeof si[0]; k++) {
          if (si[k].ssi_signo == SIGCHLD) child = true;
          else stop(); /* SIGTERM, SIGHUP */
        }
      }
      if (child) reap();
    }
    if (!stopping && fds[1].revents != 0) handle_input();
    flush_output();
  }
  flush_output();
  return 0;
}
