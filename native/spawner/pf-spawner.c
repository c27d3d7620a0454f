/*
 * pf-spawner: the native spawner helper of pilotfish's Executor (docs/architecture.md).
 *
 * A small long-lived process that starts task processes for the agent, so the big Node process
 * never forks on its hot path. src/components/executor/process/spawner-pool.ts starts a few of
 * these (built by scripts/build-native.sh into dist/native/pf-spawner) and falls back to the Node
 * helper (src/components/executor/process/helper/main.ts) when this binary is not built. Both
 * speak the same protocol and have the same semantics; the integration tests run against both.
 *
 * Usage: pf-spawner [--cgroup BASE [--cgroup-limits] [--cgroup-outer DIR]] [--kill-grace-ms N]
 *   [--stream PATH] [--stream-cap-bytes N] [--stream-rotate-bytes N] [--stream-keep-bytes N]
 *   [--hold-ms N] [--keep PATH --keep-ms N] (the pool gives them).
 *
 * Protocol: newline-delimited JSON, one object per line, UTF-8.
 *   in (stdin):
 *     {"op":"spawn","uid":S,"executable":S,"args":[S...],"env":{K:S...},"cwd":S,
 *      "stdoutPath":S,"stderrPath":S,"files"?:[{"path":S,"content":S}...],"killScope"?:"process",
 *      "cpus"?:S,"after"?:S,"cgroups"?:[S...],"cgroupLimits"?:{F:S...},"mkdir"?:S,
 *      "recycle"?:true}
 *     the same with "stream":{"attempt":N} (N a whole number in [0, 2^32)) instead of the paths
 *     {"op":"kill","uid":S,"signal":"SIGTERM"|"SIGKILL"|"SIGINT"|"SIGHUP"|"SIGQUIT"|"SIGUSR1"|
 *      "SIGUSR2"|"SIGALRM"}   (a signal other than SIGKILL only tells the task something)
 *     {"op":"end"}      stop as at stdin EOF without --keep (what follows it is ignored)
 *     {"op":"status"}   answered with one status event (never held)
 *   out (stdout):
 *     {"ev":"ready","pid":N,"tracking":"cgroup"|"proc","markPrefix":S,"why"?:S}   first, once
 *      (and "reattached":true first on each keep socket connection, see Keep mode)
 *     {"ev":"status","running":[{"uid":S,"pid":N}...],"queued":[S...],"ended":[E...]}  E: the
 *      last 1,024 exited and failed events produced, oldest first, each exactly as it was sent
 *     {"ev":"started","uid":S,"pid":N,"t":MS}          MS: epoch ms (CLOCK_REALTIME, to the µs)
 *     {"ev":"exited","uid":S,"exitCode":N|null,"signal":"SIGTERM"|...|null,"t":MS,"oomKills"?:N,
 *      "clean"?:true,"recycled"?:true}  clean: nothing of the task is left (its cgroup was
 *      empty); recycled: its own directory became a spare (Spare directories)
 *      and for a 'stream' spawn "stdoutTail":B64,"stderrTail":B64,"stdoutBytes":N,"stderrBytes":N
 *     {"ev":"failed","uid":S,"code":"ENOENT"|...,"message":S}   the task never ran (a queued
 *      one dropped: "ECANCELED","canceled before it started")
 *     {"ev":"error","message":S}                         a bad request, a failed kill
 *     {"ev":"lost","uid":S,"attempt":N,"errno":"ENOSPC"|...}  frames of it were not written
 * The reader is strict RFC 8259 JSON (string escapes including \uXXXX and surrogate pairs; a lone
 * surrogate becomes U+FFFD, as Node's UTF-8 encoding of it does; invalid UTF-8 is rejected).
 * Unknown members are ignored and a duplicated member's last value wins, as with JSON.parse.
 * Strings may hold any character, \u0000 included; a NUL in the executable, an argument, the
 * environment, cwd or a path fails the spawn (EINVAL), as Node's spawn refuses it. A line that is
 * not JSON, or not one of the requests above, gets an error event; the helper carries on.
 *
 * Semantics:
 *   - spawn: makes `mkdir` (the task's own directory, mode 0700, unless it exists; its parent
 *     must; a spare directory beside it is renamed into place where the helper has one, see
 *     Spare directories), writes `files` (O_WRONLY|O_CREAT|O_TRUNC, 0600), opens stdoutPath and stderrPath the
 *     same way, then starts `executable args` (argv[0] = executable; looked up in PATH, the task's
 *     PATH if its env sets one, when it has no '/'; a file without a #! line runs under /bin/sh,
 *     as execvp does) in `cwd`, stdin /dev/null, with the helper's environment plus `env` plus
 *     PF_TASK_MARK (<markPrefix><serial>, which neither may set), in a session and process group
 *     of its own (setsid), with every signal unblocked and at its default action, and, with
 *     'cgroup' tracking, in a cgroup of its own (see Tracking below). posix_spawn reports a
 *     failed exec as its error, so a missing executable is a failed event (ENOENT), never an
 *     exit 127. The helper (single-threaded) changes into `cwd` itself around posix_spawn and
 *     back: a bad cwd is told apart from a bad executable ("working directory 'X' does not
 *     exist"), and no posix_spawn_file_actions_addchdir_np is needed (glibc >= 2.29). Needs
 *     glibc >= 2.26 (POSIX_SPAWN_SETSID) and Linux (signalfd, /proc; cgroup.kill: Linux 5.14).
 *     With `cpus` (a cpulist, "0-3,8") the helper pins itself around posix_spawn, so the task
 *     starts pinned; a list that cannot be set is said on the task's stderr, the task unpinned.
 *     With `cgroups` (cgroup v1 directories `<own>/<base>/<task>`, made and limited by the pool:
 *     the task's memory, pids and cpu limits) the helper moves itself into each around
 *     posix_spawn and back two levels up, so the task starts inside them; one it cannot enter
 *     fails the spawn ("cannot enter the task's cgroup 'X': ...").
 *     With `cgroupLimits` (cgroup v2, given --cgroup-limits: file names of the task's cgroup and
 *     their values, "memory.max":"33554432") the helper writes each into <home>/<serial> before
 *     the task starts there; one it cannot write is said in an error event and the task runs
 *     without it. Where memory.max was set, the exit carries the OOM kills of the task's cgroup
 *     (`oom_kill` of memory.events, read before the cgroup is removed) when there were any.
 *     --cgroup-limits: the pool enabled controllers in BASE, so the helper's home holds no
 *     process (cgroup v2 lets a cgroup with processes give no controller to those below it): the
 *     helper lives in <home>/helper and enables in its home the controllers the home has.
 *     --cgroup-outer DIR: where the agent runs (srun tasks start there, the helper goes there at
 *     its end), when that is not BASE's parent (an agent that moved into a cgroup of its own).
 *   - kill: sends the signal to every process of the task, tracked as the ready event says
 *     ('cgroup': a cgroup per task, where --cgroup BASE is given and the helper can move into
 *     BASE/<pid>, which `why` explains otherwise; 'proc': the task's process group, every other
 *     process of its session (mpirun puts ranks in groups of their own), their descendants (a
 *     child that called setsid) and the orphans carrying its PF_TASK_MARK (a double fork), found
 *     in one scan of /proc made before any signal); or, for a task spawned with killScope
 *     'process' (srun), to the task's process alone. The kills of one chunk of input are sent
 *     together. A uid that is not running is ignored. process/helper/tracking.ts does the same.
 *   - task end: when a task's main process exits, its exit is reported at once, and what it left
 *     behind gets SIGTERM, then SIGKILL after the kill grace (default 3000 ms), as Slurm ends a
 *     step; not for srun, whose shepherd ends its step. So a SIGKILL still comes when the main
 *     process of a canceled task exits during the grace and the Executor forgets it.
 *   - output 'stream' (a spawn with `stream`; fails with EINVAL unless the helper was started
 *     with --stream PATH, which it opens O_APPEND, 0600, and starts with the magic when empty):
 *     the task's stdout and stderr are pipes, whose helper ends (non-blocking, close-on-exec) are
 *     in one epoll set; whatever the helper reads from them becomes frames (src/lib/
 *     output-frames.ts: the task's uid and attempt, at most 64 KiB of data each), appended in
 *     read order to the stream file, a loop turn's frames in one write, before that turn's
 *     events. A pipe is read whenever readable: output never blocks a task. When the task's main
 *     process exits, both pipes are drained first (what it wrote before its exit is in them),
 *     and its exit event carries the tails: the last 2,048 bytes read of each (TAIL_BYTES of
 *     src/lib/file-tail.ts, base64) and the bytes read in all. What it left behind is framed on
 *     under its uid until both pipes reach EOF (the kill grace ends those processes), then one
 *     end frame (kind 3). A spawn that fails writes no frames. At the helper's end, what is still
 *     open is read and ended. A failed write of the file is cut back off and said once in an
 *     error event; its frames are lost, the tasks run on, and each task attempt they were of
 *     gets a lost event, written before the other events of that turn (so before its exit when
 *     it exited then: the Executor ends such a task with a reason).
 *   - after (queued starts): a spawn whose "after" names a task whose main process the helper has
 *     not reaped yet, or a spawn queued here, is queued behind it: it keeps its request line and
 *     nothing else (no pipes, cgroup or files), and starts right after that one is reaped, fails
 *     to start or is dropped, in the same loop turn, before the turn's events are written (its
 *     started event has the time it really started); when it cannot start, those behind it start
 *     too. Chains work (C after B after A). Any other "after" (unknown, already reaped) starts at
 *     once. A kill of a queued uid drops it with a failed event (ECANCELED, "canceled before it
 *     started"); those behind it wait behind what it waited for. A spawn of a uid that runs or is
 *     queued fails (EEXIST). At the helper's end every queued spawn fails, ECANCELED.
 *   - Exits come from SIGCHLD (signalfd), reaped with waitpid(-1, WNOHANG) loops: no polling.
 *   - Every event of one loop turn goes out in one write. With --hold-ms N (default 0), while a
 *     spawn is queued, the started, exited and failed events wait up to N ms from the first one
 *     held (the poll timeout, no thread) and go in one write, at once when nothing is queued any
 *     more; ready and error events are never held (an error takes those held with it). Stream
 *     frames are written every turn all the same, before the events that follow them.
 *   - End: on stdin EOF, SIGTERM or SIGHUP, or when stdout is gone (EPIPE), the helper SIGKILLs
 *     every task it runs (each with its kill scope) and all that ended tasks left, reports the
 *     exits, waits for them all (and for every task cgroup to empty), writes the end frames of
 *     the outputs still open, removes its cgroups and exits 0, so no task outlives the agent.
 *     SIGINT is ignored: the agent decides. A stream file it cannot open: exit 66, on stderr.
 *     `end` ends the same way, and is how a master stops a helper that has --keep.
 *   - Keep mode (--keep PATH --keep-ms N): the loss of the master (stdin EOF or a read error,
 *     or a failed write: EPIPE) does not end the helper. Its tasks run on, exits still come from
 *     SIGCHLD and output still goes to files and the stream file; every event is held (a line
 *     that a failed write cut is held whole), stdin and stdout become /dev/null, and the helper
 *     listens on the Unix stream socket PATH (made 0600; a stale one removed first; PATH's
 *     directory is the caller's). The first master that connects gets a ready event with
 *     "reattached":true, then every held event in order, and from then on the protocol runs
 *     over that connection; a second loss repeats this. The socket listens only while no master
 *     is attached (it is removed once one connects), so a second master is refused. When no
 *     master connects within N ms of a loss, the helper ends as at EOF without --keep (kills
 *     every task, reports into the void, removes its cgroups, exits 0).
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
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
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
/** This turn's lost events: written before its other events (flush_output). */
static Buf lost_events;
static bool stdout_broken;
/**
 * --hold-ms: while a spawn is queued, events wait up to this long from the first one held (so
 * they go at most once per hold), unless an error event (`urgent`) is among them.
 */
static long long hold_ms;
static long long held_at;
static bool urgent;
/**
 * The master's ends: stdin and stdout, then (--keep) a connection to keep_path; -1 while none is
 * attached and events are held (see Keep mode below). keep_deadline: when a detached helper
 * stops waiting for one (0: not detached).
 */
static int master_in = STDIN_FILENO, master_out = STDOUT_FILENO;
static const char *keep_path;
static long long keep_deadline;
/** Every task is being killed: the helper exits once they are gone (stop()). */
static bool stopping;

static size_t utf8_len(const unsigned char *s, const unsigned char *end);
static void recent_add(size_t from);
static void master_detach(void);
static void master_write_failed(size_t off);

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

/** `reattached`: for a master that connected to the keep socket. */
static void emit_ready(Buf *b, bool cgroup, const char *mark_prefix, const Buf *why,
                       bool reattached) {
  buf_str(b, "{\"ev\":\"ready\",\"pid\":");
  buf_long(b, (long)getpid());
  buf_str(b, ",\"tracking\":");
  buf_str(b, cgroup ? "\"cgroup\"" : "\"proc\"");
  buf_str(b, ",\"markPrefix\":");
  buf_json(b, mark_prefix, strlen(mark_prefix));
  if (why->len > 0) {
    buf_str(b, ",\"why\":");
    buf_json(b, why->p, why->len);
  }
  if (reattached) buf_str(b, ",\"reattached\":true");
  buf_str(b, "}\n");
}

/** ,"t":<now in epoch ms, to the µs>: when the task started or ended, for its profile. */
static void buf_now(Buf *b) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long us = ts.tv_nsec / 1000;
  char frac[8];
  snprintf(frac, sizeof frac, ".%03ld", us % 1000);
  buf_str(b, ",\"t\":");
  buf_long(b, (long)ts.tv_sec * 1000 + us / 1000);
  buf_str(b, frac);
}

static void emit_started(const char *uid, size_t ulen, pid_t pid) {
  buf_str(&out, "{\"ev\":\"started\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"pid\":");
  buf_long(&out, (long)pid);
  buf_now(&out);
  buf_str(&out, "}\n");
}

/** The output of a 'stream' spawn (see Output streams below). */
typedef struct Output Output;

static void buf_tails(Buf *b, const Output *o);

/**
 * `o`: a 'stream' spawn's output, whose tails the event carries; NULL for files. `clean`: nothing
 * of the task is left (its cgroup was empty); `recycled`: its own directory became a spare.
 */
static void emit_exited(const char *uid, size_t ulen, int code, const char *signal,
                        const Output *o, long oom, bool clean, bool recycled) {
  size_t from = out.len;
  buf_str(&out, "{\"ev\":\"exited\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"exitCode\":");
  if (signal == NULL) buf_long(&out, code);
  else buf_str(&out, "null");
  buf_str(&out, ",\"signal\":");
  if (signal == NULL) buf_str(&out, "null");
  else buf_json(&out, signal, strlen(signal));
  if (o != NULL) buf_tails(&out, o);
  if (oom > 0) {
    buf_str(&out, ",\"oomKills\":");
    buf_long(&out, oom);
  }
  if (clean) buf_str(&out, ",\"clean\":true");
  if (recycled) buf_str(&out, ",\"recycled\":true");
  buf_now(&out);
  buf_str(&out, "}\n");
  recent_add(from);
}

static void emit_failed(const char *uid, size_t ulen, const char *code, const Buf *message) {
  size_t from = out.len;
  buf_str(&out, "{\"ev\":\"failed\",\"uid\":");
  buf_json(&out, uid, ulen);
  buf_str(&out, ",\"code\":");
  buf_json(&out, code, strlen(code));
  buf_str(&out, ",\"message\":");
  buf_json(&out, message->p, message->len);
  buf_str(&out, "}\n");
  recent_add(from);
}

static void emit_error(const char *message, size_t n) {
  urgent = true; /* never held */
  buf_str(&out, "{\"ev\":\"error\",\"message\":");
  buf_json(&out, message, n);
  buf_str(&out, "}\n");
}

static void stop(void);

/**
 * Writes every queued event to the master; a reader gone (EPIPE) stops the helper, or with
 * --keep detaches it. Detached, the events stay in `out` for the next master.
 */
static void flush_output(void) {
  if (lost_events.len > 0) { /* before the exits they concern */
    buf_add(&lost_events, out.p, out.len);
    Buf t = out;
    out = lost_events;
    lost_events = t;
    lost_events.len = 0;
  }
  if (master_out < 0) return;
  size_t off = 0;
  while (off < out.len && !stdout_broken) {
    ssize_t n = write(master_out, out.p + off, out.len - off);
    if (n >= 0) {
      off += (size_t)n;
    } else if (errno != EINTR && keep_path != NULL && !stopping) {
      master_write_failed(off);
      return;
    } else if (errno != EINTR) {
      stdout_broken = true; /* EPIPE, or anything else: nobody reads us */
    }
  }
  out.len = 0;
  held_at = 0;
  urgent = false;
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
  /**
   * J_STR: the decoded bytes, NUL-terminated (and possibly holding NULs: use len); J_NUM: its
   * text in the line (not NUL-terminated).
   */
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
    v->str = (char *)ps->p;
    if (!parse_number(ps)) return NULL;
    v->len = (size_t)((char *)ps->p - v->str);
    return v;
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

/**
 * A JSON number that is a whole number in [0, 2^32) into *out, as JavaScript reads it (1.0 and
 * 1e0 are 1); false otherwise.
 */
static bool u32_value(const JVal *v, uint32_t *out) {
  char text[128];
  if (v == NULL || v->type != J_NUM || v->len >= sizeof text) return false;
  memcpy(text, v->str, v->len);
  text[v->len] = '\0';
  double d = strtod(text, NULL);
  if (!(d >= 0 && d <= 4294967295.0) || d != (double)(uint32_t)d) return false;
  *out = (uint32_t)d;
  return true;
}

/** A JSON number that is a whole number in [1, 2^53] into *out; false otherwise. */
static bool count_value(const JVal *v, unsigned long long *out) {
  char text[128];
  if (v == NULL || v->type != J_NUM || v->len >= sizeof text) return false;
  memcpy(text, v->str, v->len);
  text[v->len] = '\0';
  double d = strtod(text, NULL);
  if (!(d >= 1 && d <= 9007199254740992.0) || d != (double)(unsigned long long)d) return false;
  *out = (unsigned long long)d;
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Tasks: by uid (kills) and by pid (exits)                                                    */

typedef struct Queued Queued;

/** The spawns queued behind one task or queued spawn ("after" it), in the order they start. */
typedef struct {
  Queued *head, *tail;
} Followers;

typedef struct Task {
  char *uid;
  size_t ulen;
  pid_t pid;
  bool process_only;
  /** A 'stream' spawn: its output, which outlives the task until its pipes' end; else NULL. */
  Output *output;
  /** Numbers the task within the helper: its cgroup's name and the end of its mark. */
  unsigned long serial;
  /** It runs in the cgroup <home>/<serial>. */
  bool has_cg;
  /** Its cgroup has a memory.max (cgroupLimits): its exit carries the OOM kills. */
  bool mem_limited;
  /** The spawns that start when its main process is reaped. */
  Followers behind;
  /** Its own directory, kept as a spare if it leaves it empty (`recycle`); else NULL. */
  char *recycle_dir;
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

static Task *task_add(const char *uid, size_t n, pid_t pid, bool process_only,
                      unsigned long serial, bool has_cg, Output *output) {
  if (n_tasks >= n_buckets) tasks_grow();
  Task *t = xmalloc(sizeof *t);
  t->behind = (Followers){NULL, NULL};
  t->uid = xmalloc(n + 1);
  memcpy(t->uid, uid, n);
  t->uid[n] = '\0';
  t->ulen = n;
  t->pid = pid;
  t->process_only = process_only;
  t->serial = serial;
  t->has_cg = has_cg;
  t->mem_limited = false;
  t->recycle_dir = NULL;
  t->output = output;
  size_t i = hash_bytes(uid, n) & (n_buckets - 1), j = hash_pid(pid) & (n_buckets - 1);
  t->next_uid = by_uid[i];
  by_uid[i] = t;
  t->next_pid = by_pid[j];
  by_pid[j] = t;
  n_tasks++;
  return t;
}

static void task_remove(Task *t) {
  Task **pp = &by_uid[hash_bytes(t->uid, t->ulen) & (n_buckets - 1)];
  while (*pp != t) pp = &(*pp)->next_uid;
  *pp = t->next_uid;
  pp = &by_pid[hash_pid(t->pid) & (n_buckets - 1)];
  while (*pp != t) pp = &(*pp)->next_pid;
  *pp = t->next_pid;
  free(t->recycle_dir);
  free(t->uid);
  free(t);
  n_tasks--;
}

/* ------------------------------------------------------------------------------------------ */
/* Spare directories (SpawnSpec.recycle): the own directory of a task that exited 0 and left  */
/* it empty, with nothing of the task left (its cgroup was empty), is renamed to a spare      */
/* beside it, `.pf-spare-<helper pid>-<n>`, reset first (mode 0700, no ACL), and a later      */
/* spawn's `mkdir` in the same parent renames a spare into place instead of making one. On   */
/* ext4 a mkdir and an rmdir per task cost ~100 us of kernel time under load (inode           */
/* allocation and release); two renames within one directory cost a fraction of that. A      */
/* spare that is not empty when checked, or not ours, is left as it is. At the helper's end   */
/* its spares are removed.                                                                    */

#define SPARES_MAX 64

static struct {
  char *path;
  size_t parent_len; /* of path, up to its last '/' */
} spares[SPARES_MAX];
static size_t n_spares;
static unsigned long spare_serial;
/** The file system refused RENAME_NOREPLACE: no more spares are made. */
static bool spares_off;

static size_t parent_len(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash == NULL ? 0 : (size_t)(slash - path);
}

/** Puts a spare of `path`'s parent at `path`: true if it did (else the caller makes one). */
static bool take_spare(const char *path) {
  size_t pl = parent_len(path);
  for (size_t i = n_spares; i-- > 0;) {
    if (spares[i].parent_len != pl || strncmp(spares[i].path, path, pl) != 0) continue;
    if (renameat2(AT_FDCWD, spares[i].path, AT_FDCWD, path, RENAME_NOREPLACE) == 0) {
      free(spares[i].path);
      spares[i] = spares[--n_spares];
      return true;
    }
    if (errno == EEXIST) return false; /* the task's directory is there already: keep it */
    if (errno == EINVAL) spares_off = true;
    (void)rmdir(spares[i].path); /* gone, or cannot be moved: dropped */
    free(spares[i].path);
    spares[i] = spares[--n_spares];
    return false;
  }
  return false;
}

/** Whether the directory open at `fd` holds nothing but "." and "..". */
static bool dir_empty(int fd) {
  char buf[512];
  ssize_t n = getdents64(fd, buf, sizeof buf);
  if (n < 0) return false;
  for (ssize_t at = 0; at < n;) {
    const struct dirent64 *d = (const struct dirent64 *)(buf + at);
    if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0) return false;
    at += d->d_reclen;
  }
  return true;
}

/** Resets the directory open at `fd` to what mkdir(0700) makes: ours, 0700, no ACL. */
static bool dir_reset(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) return false;
  if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0) return false;
  static const char *const acls[] = {"system.posix_acl_access", "system.posix_acl_default"};
  for (size_t i = 0; i < 2; i++) {
    if (fremovexattr(fd, acls[i]) != 0 && errno != ENODATA && errno != ENOTSUP) return false;
  }
  return true;
}

/** A task's own directory, left empty, becomes a spare (true); else it stays as it is. */
static bool keep_spare(const char *dir) {
  if (spares_off || n_spares == SPARES_MAX) return false;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = dir_empty(fd) && dir_reset(fd);
  close(fd);
  if (!ok) return false;
  size_t pl = parent_len(dir);
  Buf p = {0};
  buf_add(&p, dir, pl);
  buf_str(&p, "/.pf-spare-");
  buf_long(&p, (long)getpid());
  buf_char(&p, '-');
  buf_long(&p, (long)++spare_serial);
  buf_char(&p, '\0');
  if (rename(dir, p.p) != 0) {
    free(p.p);
    return false;
  }
  spares[n_spares].path = p.p;
  spares[n_spares].parent_len = pl;
  n_spares++;
  return true;
}

/** At the helper's end: its spares go. */
static void spares_drop(void) {
  for (size_t i = 0; i < n_spares; i++) {
    (void)rmdir(spares[i].path);
    free(spares[i].path);
  }
  n_spares = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Queued starts: a spawn "after" a task that runs here (or is queued here) waits for its end  */

struct Queued {
  char *uid;
  size_t ulen;
  /** The request line as it came, parsed again when it starts: until then it holds nothing. */
  char *req;
  size_t rlen;
  /** The line it waits in (what it follows: a Task's or a Queued's `behind`), its next there. */
  Followers *in;
  Queued *next;
  Followers behind;
  Queued *next_uid;
};

static Queued **queued;
static size_t q_buckets, n_queued;

static Queued *queued_by_uid(const char *uid, size_t n) {
  if (q_buckets == 0) return NULL;
  for (Queued *q = queued[hash_bytes(uid, n) & (q_buckets - 1)]; q != NULL; q = q->next_uid) {
    if (q->ulen == n && memcmp(q->uid, uid, n) == 0) return q;
  }
  return NULL;
}

static void queued_grow(void) {
  size_t nb = q_buckets == 0 ? 64 : q_buckets * 2;
  Queued **b = xmalloc(nb * sizeof *b);
  memset(b, 0, nb * sizeof *b);
  for (size_t i = 0; i < q_buckets; i++) {
    for (Queued *q = queued[i], *next; q != NULL; q = next) {
      next = q->next_uid;
      size_t j = hash_bytes(q->uid, q->ulen) & (nb - 1);
      q->next_uid = b[j];
      b[j] = q;
    }
  }
  free(queued);
  queued = b;
  q_buckets = nb;
}

/** The line behind the running task or queued spawn `uid`; NULL when it is neither. */
static Followers *line_of(const char *uid, size_t n) {
  Task *t = task_by_uid(uid, n);
  if (t != NULL) return &t->behind;
  Queued *q = queued_by_uid(uid, n);
  return q != NULL ? &q->behind : NULL;
}

/** Queues the spawn `req` (a whole request line) of `uid` at the end of `line`. */
static void enqueue(const char *uid, size_t ulen, const char *req, size_t rlen, Followers *line) {
  if (n_queued >= q_buckets) queued_grow();
  Queued *q = xmalloc(sizeof *q);
  q->uid = xmalloc(ulen + 1);
  memcpy(q->uid, uid, ulen);
  q->uid[ulen] = '\0';
  q->ulen = ulen;
  q->req = xmalloc(rlen + 1);
  memcpy(q->req, req, rlen);
  q->rlen = rlen;
  q->behind = (Followers){NULL, NULL};
  q->in = line;
  q->next = NULL;
  if (line->tail != NULL) line->tail->next = q;
  else line->head = q;
  line->tail = q;
  size_t i = hash_bytes(uid, ulen) & (q_buckets - 1);
  q->next_uid = queued[i];
  queued[i] = q;
  n_queued++;
}

/** Takes `q` out of the uid table (not out of its line) and frees it. */
static void queued_free(Queued *q) {
  Queued **pp = &queued[hash_bytes(q->uid, q->ulen) & (q_buckets - 1)];
  while (*pp != q) pp = &(*pp)->next_uid;
  *pp = q->next_uid;
  n_queued--;
  free(q->uid);
  free(q->req);
  free(q);
}

/** `from`'s spawns become `to`'s (which is empty): those behind a spawn that started. */
static void followers_move(Followers *to, Followers *from) {
  *to = *from;
  *from = (Followers){NULL, NULL};
  for (Queued *q = to->head; q != NULL; q = q->next) q->in = to;
}

static void emit_canceled(const Queued *q, const char *text) {
  Buf m = {0};
  buf_str(&m, text);
  emit_failed(q->uid, q->ulen, "ECANCELED", &m);
  free(m.p);
}

/** A kill of a queued spawn: it fails, and those behind it take its place in its line. */
static void cancel_queued(Queued *q) {
  Followers *line = q->in;
  Queued **pp = &line->head, *prev = NULL;
  while (*pp != q) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (q->behind.head != NULL) {
    for (Queued *b = q->behind.head; b != NULL; b = b->next) b->in = line;
    *pp = q->behind.head;
    q->behind.tail->next = q->next;
    if (line->tail == q) line->tail = q->behind.tail;
  } else {
    *pp = q->next;
    if (line->tail == q) line->tail = prev;
  }
  emit_canceled(q, "canceled before it started");
  queued_free(q);
}

/** The helper stops: no queued spawn starts; each fails. */
static void cancel_all_queued(void) {
  for (size_t i = 0; i < n_buckets; i++) {
    for (Task *t = by_uid[i]; t != NULL; t = t->next_uid) t->behind = (Followers){NULL, NULL};
  }
  for (size_t i = 0; i < q_buckets; i++) {
    while (queued[i] != NULL) {
      emit_canceled(queued[i], "canceled before it started: the spawner helper is stopping");
      queued_free(queued[i]);
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Tracking: every process of a task (as tracking.ts, kill-session.ts, task-cgroup.ts in
 * src/components/executor/process/helper/) */
/*                                                                                            */
/* 'cgroup' (given --cgroup BASE, and able to move into BASE/<pid>, its home): each task runs */
/* in the cgroup <home>/<serial>; a SIGTERM goes to every process in its cgroup.procs, a      */
/* SIGKILL through cgroup.kill (which gets forks racing it too), and the cgroup is removed    */
/* once empty (cgroup.events wakes poll with POLLPRI when `populated` changes). srun tasks    */
/* start outside, where the agent runs, so that no kill of a cgroup reaches srun's shepherd.  */
/* 'proc' (otherwise): a task's group, session and descendants, and the orphans (processes    */
/* whose parent is the helper or one of its ancestors, init included) whose PF_TASK_MARK is   */
/* the task's, all found in one scan of /proc made before any signal.                         */
/* When a task's main process exits, what it left behind gets SIGTERM, then SIGKILL after the */
/* kill grace, as Slurm ends a step; the exit is reported at once. In 'proc' the task ends of */
/* SWEEP_DELAY_MS share one scan.                                                             */

#define SWEEP_DELAY_MS 50
#define MARK_KEY "PF_TASK_MARK="

static long long kill_grace_ms = 3000;
/** PF_TASK_MARK of a task: this prefix (unique on the machine), then the task's serial. */
static char mark_prefix[64];
static unsigned long next_serial;
/** 'cgroup': BASE, the home directory, its cgroup.procs; cg_why: why not, when asked. */
static const char *cg_base, *cg_outer;
static bool cg_limits;
static int cg_home = -1, cg_home_procs = -1;
static Buf cg_why;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/** An error event: `what` 'name': the errno's text. */
static void emit_errno(const char *what, const char *name, int e) {
  Buf m = {0};
  buf_str(&m, what);
  buf_str(&m, " '");
  buf_str(&m, name);
  buf_str(&m, "': ");
  errno_text(&m, e);
  emit_error(m.p, m.len);
  free(m.p);
}

/** Writes our pid into a cgroup.procs: the helper moves into that cgroup. 0 or an errno. */
static int move_self(int procs_fd) {
  char pid[24];
  int n = snprintf(pid, sizeof pid, "%ld", (long)getpid());
  return write(procs_fd, pid, (size_t)n) == n ? 0 : errno;
}

/** Opens the cgroup.procs of the agent's cgroup (--cgroup-outer, or BASE's parent); -1, errno. */
static int open_outer_procs(void) {
  if (cg_outer != NULL) {
    Buf p = {0};
    buf_str(&p, cg_outer);
    buf_str(&p, "/cgroup.procs");
    buf_char(&p, '\0');
    int fd = open(p.p, O_WRONLY | O_CLOEXEC);
    free(p.p);
    return fd;
  }
  const char *slash = strrchr(cg_base, '/');
  if (slash == NULL) {
    errno = EINVAL;
    return -1;
  }
  Buf p = {0};
  buf_add(&p, cg_base, (size_t)(slash - cg_base));
  buf_str(&p, "/cgroup.procs");
  buf_char(&p, '\0');
  int fd = open(p.p, O_WRONLY | O_CLOEXEC);
  free(p.p);
  return fd;
}

/** BASE/<pid>, NUL-terminated, in a new Buf. */
static Buf home_path(void) {
  Buf p = {0};
  buf_str(&p, cg_base);
  buf_char(&p, '/');
  buf_long(&p, (long)getpid());
  buf_char(&p, '\0');
  return p;
}

/**
 * --cgroup-limits: enables in the home (`dir`, where the helper no longer is) each controller it
 * has of memory, pids and cpu. 0 or an errno.
 */
static int enable_controllers(int dir) {
  char have[512];
  int fd = openat(dir, "cgroup.controllers", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, have, sizeof have - 1);
  int e = n < 0 ? errno : 0;
  if (fd >= 0) close(fd);
  if (n < 0) return e;
  have[n] = '\0';
  char want[64] = "";
  for (char *w = strtok(have, " \n"); w != NULL; w = strtok(NULL, " \n")) {
    if (strcmp(w, "memory") == 0 || strcmp(w, "pids") == 0 || strcmp(w, "cpu") == 0) {
      strcat(want, want[0] == '\0' ? "+" : " +");
      strcat(want, w);
    }
  }
  if (want[0] == '\0') return 0;
  fd = openat(dir, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
  e = fd < 0 ? errno : write(fd, want, strlen(want)) == (ssize_t)strlen(want) ? 0 : errno;
  if (fd >= 0) close(fd);
  return e;
}

/**
 * Moves the helper into its home, BASE/<pid> (--cgroup-limits: into <home>/helper, and enables
 * the home's controllers); else says why in cg_why and tracks by /proc.
 */
static void cgroup_setup(const char *base) {
  cg_base = base;
  Buf home = home_path();
  const char *step = "cannot create";
  int e = 0;
  if (mkdir(home.p, 0755) != 0) {
    e = errno;
  } else {
    step = "cannot move into";
    cg_home = open(home.p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *leaf = "cgroup.procs";
    if (cg_limits && cg_home >= 0) {
      leaf = "helper/cgroup.procs";
      if (mkdirat(cg_home, "helper", 0755) != 0) {
        e = errno;
        step = "cannot create the helper's cgroup in";
      }
    }
    if (e == 0 && cg_home >= 0) cg_home_procs = openat(cg_home, leaf, O_WRONLY | O_CLOEXEC);
    if (e == 0) e = cg_home_procs < 0 ? errno : move_self(cg_home_procs);
    if (e == 0 && cg_limits && (e = enable_controllers(cg_home)) != 0) {
      step = "cannot enable the controllers of";
      int outer = open_outer_procs();
      if (outer >= 0) {
        if (move_self(outer) != 0) die("cannot move back out of the helper's cgroup");
        close(outer);
      }
    }
    if (e != 0) {
      if (cg_home_procs >= 0) close(cg_home_procs);
      if (cg_home >= 0) {
        unlinkat(cg_home, "helper", AT_REMOVEDIR);
        close(cg_home);
      }
      cg_home = cg_home_procs = -1;
      rmdir(home.p);
    }
  }
  if (e != 0) {
    buf_str(&cg_why, step);
    buf_str(&cg_why, " '");
    buf_str(&cg_why, home.p);
    buf_str(&cg_why, "': ");
    errno_text(&cg_why, e);
  }
  free(home.p);
}

/** The helper exits: out of its home to the agent's cgroup; removes it, and the base if last. */
static void cgroup_leave(void) {
  if (cg_home < 0) return;
  Buf home = home_path();
  int outer = open_outer_procs();
  int e = outer < 0 ? errno : move_self(outer);
  if (outer >= 0) close(outer);
  if (e == 0 && cg_limits && unlinkat(cg_home, "helper", AT_REMOVEDIR) != 0) e = errno;
  if (e == 0 && rmdir(home.p) != 0) e = errno;
  if (e != 0) emit_errno("cannot remove the helper's cgroup", home.p, e);
  free(home.p);
  rmdir(cg_base); /* fails while other helpers are in it: the last one, or the pool, removes it */
}

static int cg_open(unsigned long serial, const char *file, int flags) {
  char path[64];
  snprintf(path, sizeof path, "%lu/%s", serial, file);
  return openat(cg_home, path, flags | O_CLOEXEC);
}

/** An error event about a task's cgroup: `what` '<home>/<serial>': the errno's text. */
static void cg_error(const char *what, unsigned long serial, int e) {
  Buf p = home_path();
  p.len--; /* the NUL */
  buf_char(&p, '/');
  buf_long(&p, (long)serial);
  buf_char(&p, '\0');
  emit_errno(what, p.p, e);
  free(p.p);
}

/** SIGKILL to every process in the task's cgroup and below, forks racing it included. */
static void cg_kill(unsigned long serial) {
  int fd = cg_open(serial, "cgroup.kill", O_WRONLY);
  int e = fd < 0 ? errno : write(fd, "1", 1) == 1 ? 0 : errno;
  if (fd >= 0) close(fd);
  if (e != 0 && e != ENOENT) cg_error("cannot kill the cgroup", serial, e);
}

static bool signal_pid(pid_t pid, int sig);

/**
 * `sig` to every process in the cgroup open at `dir` and in those below it (a task may make
 * cgroups of its own: an agent run as a task does). Closes `dir`.
 */
static void signal_tree(int dir, int sig) {
  int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    Buf b = {0};
    for (;;) {
      buf_reserve(&b, 4096);
      ssize_t n = read(fd, b.p + b.len, b.cap - b.len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      b.len += (size_t)n;
    }
    close(fd);
    buf_char(&b, '\0');
    for (char *p = b.p, *end; *p != '\0'; p = end) {
      long pid = strtol(p, &end, 10);
      if (end == p) break;
      if (pid > 0) signal_pid((pid_t)pid, sig);
    }
    free(b.p);
  }
  DIR *d = fdopendir(dir);
  if (d == NULL) {
    close(dir);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_type != DT_DIR || de->d_name[0] == '.') continue;
    int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sub >= 0) signal_tree(sub, sig);
  }
  closedir(d);
}

/** `sig` (not SIGKILL: cg_kill) to every process of the task's cgroup and below. */
static void cg_signal(unsigned long serial, int sig) {
  char name[24];
  snprintf(name, sizeof name, "%lu", serial);
  int dir = openat(cg_home, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) signal_tree(dir, sig);
}

static void cg_term(unsigned long serial) { cg_signal(serial, SIGTERM); }

/**
 * rmdir of the cgroup `name` under `parent`, and first of the empty ones below it (where a task
 * made some); 0 or an errno (EBUSY: processes remain).
 */
static int remove_tree(int parent, const char *name) {
  if (unlinkat(parent, name, AT_REMOVEDIR) == 0) return 0;
  if (errno != EBUSY) return errno;
  int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return errno;
  DIR *d = fdopendir(dir);
  if (d == NULL) {
    int e = errno;
    close(dir);
    return e;
  }
  int e = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_type != DT_DIR || de->d_name[0] == '.') continue;
    int r = remove_tree(dirfd(d), de->d_name);
    if (r != 0) e = r;
  }
  closedir(d);
  if (e != 0) return e;
  return unlinkat(parent, name, AT_REMOVEDIR) == 0 ? 0 : errno;
}

/** rmdir of the task's cgroup: 0 or an errno (EBUSY: processes remain). */
static int cg_remove(unsigned long serial) {
  char name[24];
  snprintf(name, sizeof name, "%lu", serial);
  return remove_tree(cg_home, name);
}

/** Reads cgroup.events again (which re-arms its POLLPRI): does the cgroup hold processes? */
static bool cg_populated(int events_fd) {
  char buf[256];
  ssize_t n = pread(events_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  return strstr(buf, "populated 1") != NULL;
}

/* --- What ended tasks left behind ------------------------------------------------------- */

typedef struct {
  unsigned long serial;
  /** The main process's pid: the leftovers' session. */
  pid_t sid;
  /** 'cgroup': its cgroup.events, polled; -1 in 'proc'. */
  int events;
  /** When they get SIGKILL (monotonic ms); 0: they had it ('cgroup' waits for the empty). */
  long long deadline;
} Linger;

typedef struct {
  Linger *v;
  size_t n, cap;
} Lingers;

/** Leftovers under SIGTERM or SIGKILL, and ('proc') ended tasks waiting for the next sweep. */
static Lingers lingers, ended;
static long long sweep_at;

static void lingers_add(Lingers *l, Linger x) {
  if (l->n == l->cap) {
    l->cap = l->cap == 0 ? 16 : l->cap * 2;
    l->v = xrealloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n++] = x;
}

/** Forgets lingers.v[i] (its cgroup is empty and removed, or 'proc' is done with it). */
static void lingers_remove(size_t i) {
  if (lingers.v[i].events >= 0) close(lingers.v[i].events);
  memmove(&lingers.v[i], &lingers.v[i + 1], (lingers.n - i - 1) * sizeof *lingers.v);
  lingers.n--;
}

/** A lingering cgroup may have emptied: remove it (and forget it) if so. */
static void linger_check(size_t i) {
  Linger *l = &lingers.v[i];
  if (cg_populated(l->events)) return;
  int e = cg_remove(l->serial);
  if (e != 0 && e != ENOENT) cg_error("cannot remove", l->serial, e);
  lingers_remove(i);
}

/* --- Sweeps of /proc ('proc' tracking) -------------------------------------------------- */

typedef struct {
  pid_t sid;
  unsigned long serial;
  int sig;
  /** Signal the group -sid too (the main runs). */
  bool group;
  size_t found;
} Target;

static Target *targets;
static size_t n_targets, cap_targets;
/** Indices of targets, sorted by sid and by serial. */
static size_t *by_sid, *by_serial;

static void target_add(pid_t sid, unsigned long serial, int sig, bool group) {
  if (n_targets == cap_targets) {
    cap_targets = cap_targets == 0 ? 64 : cap_targets * 2;
    targets = xrealloc(targets, cap_targets * sizeof *targets);
    by_sid = xrealloc(by_sid, cap_targets * sizeof *by_sid);
    by_serial = xrealloc(by_serial, cap_targets * sizeof *by_serial);
  }
  targets[n_targets++] = (Target){sid, serial, sig, group, 0};
}

static int cmp_target_sid(const void *a, const void *b) {
  pid_t x = targets[*(const size_t *)a].sid, y = targets[*(const size_t *)b].sid;
  return (x > y) - (x < y);
}

static int cmp_target_serial(const void *a, const void *b) {
  unsigned long x = targets[*(const size_t *)a].serial, y = targets[*(const size_t *)b].serial;
  return (x > y) - (x < y);
}

static long target_by_sid(pid_t sid) {
  size_t lo = 0, hi = n_targets;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    pid_t s = targets[by_sid[mid]].sid;
    if (s == sid) return (long)by_sid[mid];
    if (s < sid) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

static long target_by_serial(unsigned long serial) {
  size_t lo = 0, hi = n_targets;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    unsigned long s = targets[by_serial[mid]].serial;
    if (s == serial) return (long)by_serial[mid];
    if (s < serial) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

typedef struct {
  pid_t pid, ppid, pgrp, sid;
  /** The target it belongs to: -1 none, -2 not known yet. */
  long owner;
} Proc;

static int cmp_pid(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return (x > y) - (x < y);
}

static int cmp_proc(const void *a, const void *b) {
  return cmp_pid(&((const Proc *)a)->pid, &((const Proc *)b)->pid);
}

/** Reads the parent, group and session of process `name` (a /proc entry); false if gone. */
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
  pr->pgrp = (pid_t)pgrp;
  pr->sid = (pid_t)session;
  pr->owner = -2;
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
    Proc pr = {(pid_t)pid, 0, 0, 0, -2};
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

static Proc *find_proc(pid_t pid) {
  if (n_procs == 0) return NULL;
  Proc key = {pid, 0, 0, 0, -2};
  return bsearch(&key, procs, n_procs, sizeof *procs, cmp_proc);
}

/** The helper and its ancestors, init included: where orphans of our tasks are reparented. */
static pid_t orphan_parents[64];
static size_t n_orphan_parents;

static bool is_orphan_parent(pid_t pid) {
  for (size_t i = 0; i < n_orphan_parents; i++) {
    if (orphan_parents[i] == pid) return true;
  }
  return false;
}

static Buf environ_buf;

/** The target whose mark process `pid` started with (PF_TASK_MARK), or -1. */
static long mark_owner(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1; /* gone, or not ours to read */
  Buf *b = &environ_buf;
  b->len = 0;
  for (;;) {
    buf_reserve(b, 16384);
    ssize_t n = read(fd, b->p + b->len, b->cap - b->len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    b->len += (size_t)n;
  }
  close(fd);
  size_t klen = strlen(MARK_KEY), plen = strlen(mark_prefix);
  for (size_t at = 0; at < b->len;) {
    char *nul = memchr(b->p + at, '\0', b->len - at);
    size_t end = nul == NULL ? b->len : (size_t)(nul - b->p);
    const char *e = b->p + at;
    if (end - at > klen + plen && memcmp(e, MARK_KEY, klen) == 0 &&
        memcmp(e + klen, mark_prefix, plen) == 0) {
      unsigned long serial = 0;
      bool digits = true;
      for (const char *c = e + klen + plen; c < b->p + end; c++) {
        if (*c < '0' || *c > '9') digits = false;
        else serial = serial * 10 + (unsigned long)(*c - '0');
      }
      return digits ? target_by_serial(serial) : -1;
    }
    at = end + 1;
  }
  return -1;
}

/**
 * The target `pr` belongs to, or -1: the first on its way up to an orphan parent that is a
 * target's main process or in a target's session, or, at the top of that way, an orphan (or a
 * main) that carries a target's mark.
 */
static long owner_of(Proc *pr) {
  Proc *path[256];
  size_t n = 0;
  long res = -1;
  for (Proc *q = pr; q != NULL && n < 256;) {
    if (q->owner != -2) {
      res = q->owner;
      break;
    }
    if (is_orphan_parent(q->pid)) break;
    path[n++] = q;
    res = target_by_sid(q->pid);
    if (res < 0) res = target_by_sid(q->sid);
    if (res >= 0) break;
    if (is_orphan_parent(q->ppid)) {
      res = mark_owner(q->pid);
      break;
    }
    q = find_proc(q->ppid);
  }
  for (size_t k = 0; k < n; k++) path[k]->owner = res;
  return res;
}

typedef struct {
  pid_t pid;
  size_t target;
} Member;

static Member *members;
static size_t n_members, cap_members;

/**
 * Signals every process of the targets, found in one scan of /proc made before any signal:
 * once a parent is killed, its children move away. Counts what it found in each target's
 * `found`. Leaves the targets for the caller to read and clear.
 */
static void sweep(void) {
  if (n_targets == 0) return;
  for (size_t i = 0; i < n_targets; i++) by_sid[i] = by_serial[i] = i;
  qsort(by_sid, n_targets, sizeof *by_sid, cmp_target_sid);
  qsort(by_serial, n_targets, sizeof *by_serial, cmp_target_serial);
  n_members = 0;
  if (scan_procs()) { /* no /proc: the group kills are all we can do */
    n_orphan_parents = 0;
    orphan_parents[n_orphan_parents++] = 1;
    for (Proc *p = find_proc(getpid()); p != NULL && n_orphan_parents < 64;
         p = find_proc(p->ppid)) {
      if (is_orphan_parent(p->pid)) break;
      orphan_parents[n_orphan_parents++] = p->pid;
    }
    for (size_t k = 0; k < n_procs; k++) {
      long i = owner_of(&procs[k]);
      if (i < 0) continue;
      if (targets[i].group && procs[k].pgrp == targets[i].sid) continue; /* by its group */
      if (n_members == cap_members) {
        cap_members = cap_members == 0 ? 64 : cap_members * 2;
        members = xrealloc(members, cap_members * sizeof *members);
      }
      members[n_members++] = (Member){procs[k].pid, (size_t)i};
    }
  }
  for (size_t i = 0; i < n_targets; i++) {
    if (targets[i].group && signal_pid(-targets[i].sid, targets[i].sig)) targets[i].found++;
  }
  for (size_t k = 0; k < n_members; k++) {
    Target *t = &targets[members[k].target];
    if (signal_pid(members[k].pid, t->sig)) t->found++;
  }
}

static Task *task_by_pid(pid_t pid);

/**
 * The session an ended task's leftovers are found by: its main's pid, unless that pid already
 * is another running task's (reused once the session emptied): then -1, and the mark alone.
 */
static pid_t ended_sid(pid_t sid) { return task_by_pid(sid) != NULL ? -1 : sid; }

/** 'proc': the ends gathered since the first get SIGTERM; those that left something linger. */
static void sweep_ended(void) {
  n_targets = 0;
  for (size_t i = 0; i < ended.n; i++) {
    target_add(ended_sid(ended.v[i].sid), ended.v[i].serial, SIGTERM, false);
  }
  sweep();
  long long deadline = now_ms() + kill_grace_ms;
  for (size_t i = 0; i < ended.n; i++) {
    if (targets[i].found == 0) continue;
    Linger l = ended.v[i];
    l.deadline = deadline;
    lingers_add(&lingers, l);
  }
  ended.n = 0;
  n_targets = 0;
}

/**
 * A task's main process has exited (or never started: pid 0): end what it left behind. True when
 * it is known to have left nothing (its cgroup was empty and is gone).
 */
static bool task_ended(unsigned long serial, pid_t pid, bool process_only, bool has_cg) {
  if (process_only) return false; /* srun ends its own step */
  if (has_cg) {
    int e = cg_remove(serial);
    if (e == 0) return true; /* nothing left behind: the common case */
    if (e != EBUSY) {
      cg_error("cannot remove", serial, e);
      return false;
    }
    int events = cg_open(serial, "cgroup.events", O_RDONLY);
    if (events < 0) {
      cg_error("cannot watch the task's cgroup", serial, errno);
      return false;
    }
    Linger l = {serial, pid, events, 0};
    if (stopping) {
      cg_kill(serial);
    } else {
      cg_term(serial);
      l.deadline = now_ms() + kill_grace_ms;
    }
    lingers_add(&lingers, l);
    linger_check(lingers.n - 1); /* it may have emptied before the watch began */
    return false;
  }
  if (stopping || pid <= 0) return false; /* stop() SIGKILLed them all */
  lingers_add(&ended, (Linger){serial, pid, -1, 0});
  if (sweep_at == 0) sweep_at = now_ms() + SWEEP_DELAY_MS;
  return false;
}

/** SIGKILLs what a lingering task left: its cgroup at once, or its leftovers in the next scan. */
static void linger_kill(size_t i) {
  Linger *l = &lingers.v[i];
  l->deadline = 0;
  if (l->events >= 0) {
    cg_kill(l->serial);
  } else {
    target_add(ended_sid(l->sid), l->serial, SIGKILL, false);
    lingers_remove(i);
  }
}

/** Due SIGKILLs and sweeps. */
static void run_timers(void) {
  long long now = now_ms();
  if (sweep_at != 0 && now >= sweep_at) {
    sweep_at = 0;
    sweep_ended();
  }
  n_targets = 0;
  for (size_t i = lingers.n; i-- > 0;) {
    Linger *l = &lingers.v[i];
    if (l->deadline == 0 || now < l->deadline) continue;
    linger_kill(i);
  }
  sweep();
  n_targets = 0;
}

/**
 * True while the events of this turn and earlier ones wait (--hold-ms): a spawn is queued, none
 * is an error, and the first of them was held less than hold_ms ago.
 */
static bool holding(void) {
  if (hold_ms <= 0 || n_queued == 0 || urgent || out.len == 0 || master_out < 0) return false;
  long long now = now_ms();
  if (held_at == 0) held_at = now;
  return now < held_at + hold_ms;
}

/** Milliseconds until the next timer, or -1. */
static int poll_timeout(void) {
  long long next = held_at != 0 ? held_at + hold_ms : 0;
  if (sweep_at != 0 && (next == 0 || sweep_at < next)) next = sweep_at;
  if (keep_deadline != 0 && (next == 0 || keep_deadline < next)) next = keep_deadline;
  for (size_t i = 0; i < lingers.n; i++) {
    long long d = lingers.v[i].deadline;
    if (d != 0 && (next == 0 || d < next)) next = d;
  }
  if (next == 0) return -1;
  long long left = next - now_ms();
  return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
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

/** srun tasks, signaled alone: [0] SIGTERM, [1] SIGKILL. */
static Pids kill_processes[2];

/** Sends a signal; true if it was delivered. A process already gone is no error. */
static bool signal_pid(pid_t pid, int sig) {
  if (kill(pid, sig) == 0) return true;
  if (errno == ESRCH) return false;
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
  return false;
}

/** The signal a kill request names (SIGKILL, SIGTERM, or a notice signal); 0 if none of them. */
static int kill_signal(const JVal *name) {
  static const struct { const char *name; int sig; } known[] = {
      {"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},
      {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (str_is(name, known[i].name)) return known[i].sig;
  }
  return 0;
}

/** A kill of a running task: through its cgroup now, else queued for the chunk's sweep. */
static void queue_kill(const Task *t, int sig) {
  if (t->process_only && (sig == SIGTERM || sig == SIGKILL)) {
    pids_add(&kill_processes[sig == SIGKILL ? 1 : 0], t->pid);
  } else if (t->process_only) {
    signal_pid(t->pid, sig); /* a notice (srun passes it on to the step) */
  } else if (!t->has_cg) {
    target_add(t->pid, t->serial, sig, true);
  } else if (sig == SIGKILL) {
    cg_kill(t->serial);
  } else {
    cg_signal(t->serial, sig);
  }
}

/** Sends the queued kills: one sweep of /proc for the tasks tracked there, then srun tasks. */
static void flush_kills(void) {
  static const int sigs[2] = {SIGTERM, SIGKILL};
  sweep();
  n_targets = 0;
  for (int i = 0; i < 2; i++) {
    for (size_t k = 0; k < kill_processes[i].n; k++) signal_pid(kill_processes[i].v[k], sigs[i]);
    kill_processes[i].n = 0;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Output streams ('stream' spawns, src/lib/output-frames.ts)                                  */
/*                                                                                            */
/* A 'stream' task writes into two pipes instead of two files. The helper reads whatever a    */
/* pipe holds whenever it is readable (epoll: one set for every pipe, so a turn costs the same */
/* with hundreds of tasks), so output never blocks a task, and appends it, framed with the    */
/* task's uid and attempt, to its one stream file (--stream PATH): the frames of one turn in  */
/* one write, before that turn's events. When the main process exits, its pipes are drained   */
/* first, so its exit event follows every frame of what it wrote. The pipes stay open for     */
/* what it left behind (ended by the kill grace) until both reach EOF: then one end frame.   */

#define STREAM_MAGIC "PFSTRM1\n"
#define STREAM_EXT ".pfout"
/** u32 size, u8 kind, u32 attempt, u16 uid length (little-endian), then the uid and the data. */
#define FRAME_HEAD 11
#define FRAME_DATA_MAX ((size_t)64 << 10)
enum { FRAME_STDOUT = 1, FRAME_STDERR = 2, FRAME_END = 3 };
/** The tails in exit events: TAIL_BYTES of src/lib/file-tail.ts. */
#define TAIL_BYTES 2048
/** Pipe events handled per turn; the rest wait for the next (epoll is level-triggered). */
#define MAX_READY 64

typedef struct {
  Output *owner;
  /** The read end; -1 once it reached EOF (and was closed, which leaves the epoll set). */
  int fd;
  unsigned char kind;
  /** Bytes read in all; the last TAIL_BYTES of them, a ring whose next byte is at bytes % size. */
  unsigned long long bytes;
  unsigned char tail[TAIL_BYTES];
} Pipe;

/**
 * A capped output (src/components/executor/process/helper/output-cap.ts, the same bytes): the
 * first half of the cap framed as it comes, then only the last half held, as records (u8 kind,
 * u32 length, data) from `start` in `held`; at the end a marker line per stream that dropped
 * bytes, then the held records. Dropping from the front moves a record's head forward.
 */
typedef struct {
  unsigned long long head, tail, framed, held_bytes;
  unsigned long long dropped[2];
  bool line_ended[2];
  Buf held;
  size_t start;
} Cap;
#define HELD_HEAD 5

struct Output {
  char *uid;
  size_t ulen;
  uint32_t attempt;
  /** stdout, stderr. */
  Pipe pipes[2];
  /** NULL: not capped. */
  Cap *cap;
  /** Its main process exited (and the exit event went out). */
  bool exited;
  /** Every open output, for the end frames at exit. */
  Output *prev, *next;
};

static const char *stream_path;
static int stream_fd = -1, epfd = -1;
/** --stream-cap-bytes, --stream-rotate-bytes, --stream-keep-bytes (0: none). */
static unsigned long long stream_cap, stream_rotate, stream_keep;
/** The part written now (stream_path, then its next parts), its size, and the earlier parts. */
static char *stream_current;
static unsigned long long stream_size;
typedef struct {
  char *path;
  unsigned long long size;
} Part;
static Part *parts;
static size_t nparts;
static Output *outputs;
/** The frames of this turn. */
static Buf frames;
/** A write of the stream file failed: said once, until one succeeds. */
static bool stream_failing;

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/** Appends a frame's head and uid, for `n` data bytes that follow. */
static void frame_head(unsigned char kind, const Output *o, size_t n) {
  unsigned char h[FRAME_HEAD];
  put_u32(h, (uint32_t)(FRAME_HEAD - 4 + o->ulen + n));
  h[4] = kind;
  put_u32(h + 5, o->attempt);
  h[9] = (unsigned char)(o->ulen & 0xff);
  h[10] = (unsigned char)(o->ulen >> 8);
  buf_add(&frames, h, FRAME_HEAD);
  buf_add(&frames, o->uid, o->ulen);
}

static void tail_add(Pipe *p, const unsigned char *s, size_t n) {
  size_t at = (size_t)(p->bytes % TAIL_BYTES);
  p->bytes += n;
  if (n > TAIL_BYTES) { /* only its last TAIL_BYTES stay */
    at = (at + n - TAIL_BYTES) % TAIL_BYTES;
    s += n - TAIL_BYTES;
    n = TAIL_BYTES;
  }
  size_t first = TAIL_BYTES - at < n ? TAIL_BYTES - at : n;
  memcpy(p->tail + at, s, first);
  memcpy(p->tail, s + first, n - first);
}

/** The tail in order into `dst`; returns its length. */
static size_t tail_copy(const Pipe *p, unsigned char *dst) {
  if (p->bytes <= TAIL_BYTES) {
    memcpy(dst, p->tail, (size_t)p->bytes);
    return (size_t)p->bytes;
  }
  size_t at = (size_t)(p->bytes % TAIL_BYTES);
  memcpy(dst, p->tail + at, TAIL_BYTES - at);
  memcpy(dst + TAIL_BYTES - at, p->tail, at);
  return TAIL_BYTES;
}

static void put_u32(unsigned char *p, uint32_t v);
static uint32_t get_u32(const unsigned char *p);

/** Holds `n` bytes of stream `k` past the head; drops the oldest held past the tail. */
static void cap_hold(Cap *c, int k, const unsigned char *s, size_t n) {
  unsigned char h[HELD_HEAD];
  h[0] = (unsigned char)k;
  put_u32(h + 1, (uint32_t)n);
  buf_add(&c->held, h, HELD_HEAD);
  buf_add(&c->held, s, n);
  c->held_bytes += n;
  while (c->held_bytes > c->tail) {
    unsigned char *r = (unsigned char *)c->held.p + c->start;
    int rk = r[0];
    size_t len = get_u32(r + 1);
    unsigned long long over = c->held_bytes - c->tail;
    size_t cut = over < len ? (size_t)over : len;
    c->dropped[rk] += cut;
    c->held_bytes -= cut;
    if (cut == len) {
      c->start += HELD_HEAD + len;
    } else { /* the record's head moves over the bytes dropped */
      c->start += cut;
      r = (unsigned char *)c->held.p + c->start;
      r[0] = (unsigned char)rk;
      put_u32(r + 1, (uint32_t)(len - cut));
    }
  }
  if (c->start > ((size_t)1 << 20) && c->start > c->held.len / 2) {
    memmove(c->held.p, c->held.p + c->start, c->held.len - c->start);
    c->held.len -= c->start;
    c->start = 0;
  }
}

/** How many of the `n` bytes read (stream `k`) are framed now; the rest is held. */
static size_t cap_take(Cap *c, int k, const unsigned char *s, size_t n) {
  if (c == NULL) return n;
  size_t now = c->framed >= c->head ? 0 : (size_t)(c->head - c->framed < n ? c->head - c->framed : n);
  c->framed += now;
  if (now > 0) c->line_ended[k] = s[now - 1] == '\n';
  if (now < n) cap_hold(c, k, s + now, n - now);
  return now;
}

/**
 * One read of a pipe, straight into a frame: the bytes read, 0 at its end (EOF, or an error
 * that ends it as well), -1 when it is empty now.
 */
static ssize_t pipe_read(Pipe *p) {
  size_t head = FRAME_HEAD + p->owner->ulen;
  buf_reserve(&frames, head + FRAME_DATA_MAX);
  unsigned char *data = (unsigned char *)frames.p + frames.len + head;
  ssize_t n;
  do n = read(p->fd, data, FRAME_DATA_MAX);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return -1;
  if (n <= 0) return 0;
  tail_add(p, data, (size_t)n);
  size_t now = cap_take(p->owner->cap, p->kind == FRAME_STDOUT ? 0 : 1, data, (size_t)n);
  if (now > 0) {
    frame_head(p->kind, p->owner, now); /* reserved: the data stays where it was read */
    frames.len += now;
  }
  return n;
}

/**
 * The pipe reached its end: out of the epoll set, and closed. Its close alone would not do: a
 * child just spawned may still hold a copy of the fd (posix_spawn resumes the helper before the
 * exec closes it), and the file, still open, would stay in the set, with a dangling pointer.
 */
static void pipe_close(Pipe *p) {
  epoll_ctl(epfd, EPOLL_CTL_DEL, p->fd, NULL);
  close(p->fd);
  p->fd = -1;
}

/**
 * Reads what the pipe holds now, all the main process wrote when it has exited, but not what
 * its leftovers add meanwhile (those are read as they come): a short read found it empty.
 */
static void pipe_drain(Pipe *p) {
  if (p->fd < 0) return;
  ssize_t n = pipe_read(p);
  if (n == (ssize_t)FRAME_DATA_MAX) {
    int left = 0;
    if (ioctl(p->fd, FIONREAD, &left) != 0) left = 0;
    while (left > 0 && (n = pipe_read(p)) > 0) left -= (int)n;
  }
  if (n == 0) pipe_close(p);
}

/** Frees an output without an end frame (a spawn that failed, or once it was written). */
static void output_free(Output *o) {
  for (int k = 0; k < 2; k++) {
    if (o->pipes[k].fd >= 0) pipe_close(&o->pipes[k]);
  }
  if (o->prev != NULL) o->prev->next = o->next;
  else outputs = o->next;
  if (o->next != NULL) o->next->prev = o->prev;
  if (o->cap != NULL) free(o->cap->held.p);
  free(o->cap);
  free(o->uid);
  free(o);
}

/** A capped output's end: the markers of what was dropped, then the held tail, framed. */
static void cap_release(Output *o) {
  Cap *c = o->cap;
  if (c == NULL) return;
  for (int k = 0; k < 2; k++) {
    if (c->dropped[k] == 0) continue;
    char mark[96];
    int n = snprintf(mark, sizeof mark, "%s[pilotfish: %llu bytes dropped]\n",
                     c->line_ended[k] ? "" : "\n", c->dropped[k]);
    frame_head(k == 0 ? FRAME_STDOUT : FRAME_STDERR, o, (size_t)n);
    buf_add(&frames, mark, (size_t)n);
  }
  for (size_t at = c->start; at + HELD_HEAD <= c->held.len;) {
    const unsigned char *r = (const unsigned char *)c->held.p + at;
    size_t len = get_u32(r + 1);
    frame_head(r[0] == 0 ? FRAME_STDOUT : FRAME_STDERR, o, len);
    buf_add(&frames, c->held.p + at + HELD_HEAD, len);
    at += HELD_HEAD + len;
  }
  free(c->held.p);
  free(c);
  o->cap = NULL;
}

static void output_end(Output *o) {
  cap_release(o);
  frame_head(FRAME_END, o, 0);
  output_free(o);
}

/** Once the main process exited and both pipes reached EOF: the end frame. */
static void output_check(Output *o) {
  if (o->exited && o->pipes[0].fd < 0 && o->pipes[1].fd < 0) output_end(o);
}

/**
 * The pipes of a 'stream' spawn: returns its output, whose read ends (non-blocking, like every
 * fd of the helper close-on-exec) are in the epoll set, and gives the write ends in `wr`, for
 * the task's stdout and stderr; NULL with errno.
 */
static Output *output_new(const char *uid, size_t ulen, uint32_t attempt,
                          unsigned long long cap, int wr[2]) {
  Output *o = xmalloc(sizeof *o);
  o->cap = NULL;
  if (cap > 0) {
    o->cap = xmalloc(sizeof *o->cap);
    *o->cap = (Cap){.head = (cap + 1) / 2, .line_ended = {true, true}};
    o->cap->tail = cap - o->cap->head;
  }
  o->uid = xmalloc(ulen);
  memcpy(o->uid, uid, ulen);
  o->ulen = ulen;
  o->attempt = attempt;
  o->exited = false;
  o->prev = NULL;
  o->next = outputs;
  if (outputs != NULL) outputs->prev = o;
  outputs = o;
  for (int k = 0; k < 2; k++) {
    o->pipes[k] = (Pipe){.owner = o, .fd = -1, .kind = k == 0 ? FRAME_STDOUT : FRAME_STDERR};
    wr[k] = -1;
  }
  for (int k = 0; k < 2; k++) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) goto fail;
    o->pipes[k].fd = fds[0];
    wr[k] = fds[1];
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &o->pipes[k]};
    if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0 ||
        epoll_ctl(epfd, EPOLL_CTL_ADD, fds[0], &ev) != 0) {
      goto fail;
    }
  }
  return o;
fail:;
  int e = errno;
  for (int k = 0; k < 2; k++) {
    if (wr[k] >= 0) close(wr[k]);
  }
  output_free(o);
  errno = e;
  return NULL;
}

/** The pipes epoll found readable: one read each (the rest of a busy one comes next turn). */
static void output_ready(void) {
  struct epoll_event evs[MAX_READY];
  int n;
  do n = epoll_wait(epfd, evs, MAX_READY, 0);
  while (n < 0 && errno == EINTR);
  for (int i = 0; i < n; i++) {
    Pipe *p = evs[i].data.ptr;
    if (pipe_read(p) != 0) continue;
    pipe_close(p);
    output_check(p->owner);
  }
}

/** The main process of `o` exited: frames what it wrote; the exit event carries the tails. */
static void output_exit(Output *o) {
  pipe_drain(&o->pipes[0]);
  pipe_drain(&o->pipes[1]);
}

static void buf_base64(Buf *b, const unsigned char *s, size_t n) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16;
    if (i + 1 < n) v |= (uint32_t)s[i + 1] << 8;
    if (i + 2 < n) v |= s[i + 2];
    char q[4] = {abc[v >> 18], abc[(v >> 12) & 63], i + 1 < n ? abc[(v >> 6) & 63] : '=',
                 i + 2 < n ? abc[v & 63] : '='};
    buf_add(b, q, 4);
  }
}

/** ,"stdoutTail":"<base64>","stderrTail":…,"stdoutBytes":N,"stderrBytes":N */
static void buf_tails(Buf *b, const Output *o) {
  static const char *names[2] = {"stdout", "stderr"};
  unsigned char tail[TAIL_BYTES];
  for (int k = 0; k < 2; k++) {
    buf_str(b, ",\"");
    buf_str(b, names[k]);
    buf_str(b, "Tail\":\"");
    buf_base64(b, tail, tail_copy(&o->pipes[k], tail));
    buf_char(b, '"');
  }
  for (int k = 0; k < 2; k++) {
    char num[32];
    buf_str(b, ",\"");
    buf_str(b, names[k]);
    buf_str(b, "Bytes\":");
    buf_add(b, num, (size_t)snprintf(num, sizeof num, "%llu", o->pipes[k].bytes));
  }
  if (o->cap != NULL && o->cap->dropped[0] + o->cap->dropped[1] > 0) {
    char num[32];
    buf_str(b, ",\"dropped\":");
    buf_add(b, num,
            (size_t)snprintf(num, sizeof num, "%llu", o->cap->dropped[0] + o->cap->dropped[1]));
  }
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/**
 * The frames of this turn were not written (errno `e`): a lost event for each task attempt they
 * hold (a task whose frames are not side by side may be named twice).
 */
static void emit_lost(int e) {
  const char *name = errno_name(e);
  const char *said = NULL;
  size_t said_len = 0;
  uint32_t said_attempt = 0;
  for (size_t at = 0; at + FRAME_HEAD <= frames.len;) {
    const unsigned char *h = (const unsigned char *)frames.p + at;
    uint32_t attempt = get_u32(h + 5);
    size_t ulen = (size_t)h[9] | (size_t)h[10] << 8;
    const char *uid = frames.p + at + FRAME_HEAD;
    at += 4 + (size_t)get_u32(h);
    if (said != NULL && said_len == ulen && said_attempt == attempt && memcmp(said, uid, ulen) == 0)
      continue;
    said = uid;
    said_len = ulen;
    said_attempt = attempt;
    buf_str(&lost_events, "{\"ev\":\"lost\",\"uid\":");
    buf_json(&lost_events, uid, ulen);
    buf_str(&lost_events, ",\"attempt\":");
    buf_long(&lost_events, (long)attempt);
    buf_str(&lost_events, ",\"errno\":\"");
    buf_str(&lost_events, name);
    buf_str(&lost_events, "\",\"file\":");
    buf_json(&lost_events, stream_current, strlen(stream_current));
    buf_str(&lost_events, "}\n");
  }
}

/**
 * `file`'s next part, as nextStreamPart (src/lib/output-frames.ts): `X.pfout` → `X-1.pfout`
 * → `X-2.pfout`.
 */
static char *next_part(const char *file) {
  size_t n = strlen(file), ext = strlen(STREAM_EXT);
  size_t base = n >= ext && strcmp(file + n - ext, STREAM_EXT) == 0 ? n - ext : n;
  size_t d = base;
  while (d > 0 && isdigit((unsigned char)file[d - 1])) d--;
  unsigned long long part = 0;
  if (d < base && d > 0 && file[d - 1] == '-') {
    part = strtoull(file + d, NULL, 10);
    base = d - 1;
  }
  char *next = xmalloc(base + ext + 32);
  snprintf(next, base + ext + 32, "%.*s-%llu%s", (int)base, file, part + 1, STREAM_EXT);
  return next;
}

/** Opens a part for appending (0600), STREAM_MAGIC first when empty: its fd, or -1 (errno). */
static int part_open(const char *file, unsigned long long *size) {
  int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  struct stat st;
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0) goto fail;
  *size = (unsigned long long)st.st_size;
  if (st.st_size == 0) {
    size_t m = strlen(STREAM_MAGIC);
    if (write(fd, STREAM_MAGIC, m) != (ssize_t)m) goto fail;
    *size = m;
  }
  return fd;
fail:;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}

/**
 * Past --stream-rotate-bytes: the next part takes the writes, and the oldest parts go while all
 * take more than --stream-keep-bytes. A part that cannot be opened: this one goes on.
 */
static void stream_rotate_maybe(void) {
  if (stream_rotate == 0 || stream_size < stream_rotate) return;
  char *next = next_part(stream_current);
  unsigned long long size = 0;
  int fd = part_open(next, &size);
  if (fd < 0) {
    free(next);
    return;
  }
  close(stream_fd);
  parts = xrealloc(parts, (nparts + 1) * sizeof *parts);
  parts[nparts++] = (Part){.path = stream_current, .size = stream_size};
  stream_fd = fd;
  stream_current = next;
  stream_size = size;
  unsigned long long total = stream_size;
  for (size_t i = 0; i < nparts; i++) total += parts[i].size;
  size_t gone = 0;
  while (stream_keep > 0 && total > stream_keep && gone < nparts) {
    total -= parts[gone].size;
    (void)unlink(parts[gone].path); /* removed by someone else: its room is free all the same */
    free(parts[gone].path);
    gone++;
  }
  memmove(parts, parts + gone, (nparts - gone) * sizeof *parts);
  nparts -= gone;
}

/**
 * Appends this turn's frames to the stream file in one write. A failed write is cut back off
 * (never half a frame in the file), said once until a write succeeds, and its frames are lost:
 * output never stops a task, but each task whose frames were lost is told of (emit_lost).
 */
static void flush_frames(void) {
  if (frames.len == 0) return;
  size_t off = 0;
  int e = 0;
  while (off < frames.len && e == 0) {
    ssize_t n = write(stream_fd, frames.p + off, frames.len - off);
    if (n > 0) off += (size_t)n;
    else if (n == 0) e = EIO;
    else if (errno != EINTR) e = errno;
  }
  if (e != 0) {
    struct stat st;
    if (off > 0 && fstat(stream_fd, &st) == 0) (void)!ftruncate(stream_fd, st.st_size - (off_t)off);
    if (!stream_failing) emit_errno("cannot write the output stream", stream_current, e);
    emit_lost(e);
  } else {
    stream_size += off;
  }
  stream_failing = e != 0;
  if (e == 0) stream_rotate_maybe();
  frames.len = 0;
  if (frames.cap > ((size_t)4 << 20)) { /* give back the room a busy turn took */
    frames.p = xrealloc(frames.p, (size_t)1 << 20);
    frames.cap = (size_t)1 << 20;
  }
}

/** --stream PATH: opens it for appending (0600), with STREAM_MAGIC first when it is empty. */
static void stream_open(void) {
  stream_fd = part_open(stream_path, &stream_size);
  if (stream_fd < 0) {
    fprintf(stderr, "pf-spawner: cannot open the output stream '%s': %s\n", stream_path,
            strerror(errno));
    exit(66);
  }
  stream_current = xmalloc(strlen(stream_path) + 1);
  strcpy(stream_current, stream_path);
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) die("epoll_create1");
}

/** The helper exits: what is still open is read, then ended (its end frame). */
static void outputs_finish(void) {
  while (outputs != NULL) {
    pipe_drain(&outputs->pipes[0]);
    pipe_drain(&outputs->pipes[1]);
    output_end(outputs);
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

/**
 * The helper's environment without the keys `env` sets, then `env` (last duplicate wins), then
 * PF_TASK_MARK=<mark prefix><serial>, which neither may set.
 */
static char **build_envp(const JVal *env, unsigned long serial) {
  size_t n_env = 0;
  while (environ[n_env] != NULL) n_env++;
  char **envp = arena_alloc((n_env + env->count + 2) * sizeof *envp);
  size_t k = 0;
  size_t mlen = strlen(MARK_KEY) - 1; /* without the '=' */
  for (size_t i = 0; i < n_env; i++) {
    const char *e = environ[i], *eq = strchr(e, '=');
    size_t klen = eq != NULL ? (size_t)(eq - e) : strlen(e);
    bool overridden = klen == mlen && memcmp(e, MARK_KEY, mlen) == 0;
    for (const JVal *m = env->kid; m != NULL && !overridden; m = m->next) {
      overridden = m->klen == klen && memcmp(m->key, e, klen) == 0;
    }
    if (!overridden) envp[k++] = environ[i];
  }
  for (const JVal *m = env->kid; m != NULL; m = m->next) {
    bool later = m->klen == mlen && memcmp(m->key, MARK_KEY, mlen) == 0;
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
  char *mark = arena_alloc(strlen(MARK_KEY) + strlen(mark_prefix) + 24);
  sprintf(mark, "%s%s%lu", MARK_KEY, mark_prefix, serial);
  envp[k++] = mark;
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
static int spawn_task(pid_t *pid, const JVal *exe, char **argv, const JVal *env,
                      unsigned long serial, const char *cwd, int out_fd, int err_fd,
                      bool *cwd_failed) {
  *cwd_failed = false;
  if (chdir(cwd) != 0) {
    *cwd_failed = true;
    return errno;
  }
  char **envp = build_envp(env, serial);
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

/**
 * cgroupLimits: writes each value into its file of the task's new cgroup <home>/<serial>; one
 * that cannot be written is an error event (the task runs without it). Whether memory.max is set.
 */
static bool set_limits(const JVal *limits, unsigned long serial) {
  bool memory = false;
  for (const JVal *l = limits == NULL ? NULL : limits->kid; l != NULL; l = l->next) {
    char rel[96];
    int e = EINVAL, fd = -1;
    if (l->klen < 64 && memchr(l->key, '/', l->klen) == NULL && !has_nul(l)) {
      snprintf(rel, sizeof rel, "%lu/%.*s", serial, (int)l->klen, l->key);
      fd = openat(cg_home, rel, O_WRONLY | O_CLOEXEC);
      e = fd < 0 ? errno : write(fd, l->str, l->len) == (ssize_t)l->len ? 0 : errno;
      if (fd >= 0) close(fd);
    }
    if (e == 0) {
      memory = memory || (l->klen == 10 && memcmp(l->key, "memory.max", 10) == 0);
      continue;
    }
    Buf m = {0};
    buf_str(&m, "cannot set ");
    buf_add(&m, l->key, l->klen);
    buf_str(&m, " of the task's cgroup '");
    Buf home = home_path();
    buf_add(&m, home.p, home.len - 1);
    free(home.p);
    buf_char(&m, '/');
    buf_long(&m, (long)serial);
    buf_str(&m, "': ");
    errno_text(&m, e);
    buf_str(&m, ": it runs without");
    emit_error(m.p, m.len);
    free(m.p);
  }
  return memory;
}

/** The `oom_kill` count of the task's cgroup (memory.events); 0 if none or unreadable. */
static long oom_kills(unsigned long serial) {
  char buf[512];
  int fd = cg_open(serial, "memory.events", O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *at = strstr(buf, "oom_kill ");
  return at == NULL ? 0 : strtol(at + 9, NULL, 10);
}

/**
 * 'cgroup': moves the helper to where the task must start, so that the child starts there before
 * it can run anything: the task's new cgroup <home>/<serial> (with its cgroupLimits, `*memory`
 * whether memory.max is set), or, for srun, the agent's. Returns that cgroup's open cgroup.procs,
 * -1 without task cgroups, or -2 once the failure is emitted.
 */
static int enter_for_spawn(const JVal *uid, unsigned long serial, bool process_only,
                           const JVal *limits, bool *memory) {
  if (cg_home < 0) return -1;
  int fd, e;
  const char *what;
  if (process_only) {
    what = "cannot start the task outside the task cgroups";
    fd = open_outer_procs();
  } else {
    char name[24];
    snprintf(name, sizeof name, "%lu", serial);
    what = "cannot create the task's cgroup";
    fd = mkdirat(cg_home, name, 0755) == 0 ? -1 : -3;
    if (fd == -1) {
      *memory = set_limits(limits, serial);
      what = "cannot enter the task's cgroup";
      fd = cg_open(serial, "cgroup.procs", O_WRONLY);
    }
  }
  e = fd < 0 ? errno : move_self(fd);
  if (e == 0) return fd;
  if (fd >= 0) close(fd);
  Buf m = {0};
  buf_str(&m, what);
  if (!process_only) {
    if (fd != -3) cg_remove(serial);
    Buf home = home_path();
    buf_str(&m, " '");
    buf_add(&m, home.p, home.len - 1);
    buf_char(&m, '/');
    buf_long(&m, (long)serial);
    buf_char(&m, '\'');
    free(home.p);
  }
  buf_str(&m, ": ");
  errno_text(&m, e);
  emit_failed(uid->str, uid->len, errno_name(e), &m);
  free(m.p);
  return -2;
}

/** The attempt of a 'stream' spawn into *attempt; false for a spawn to files. */
static bool stream_attempt(const JVal *req, uint32_t *attempt) {
  const JVal *stream = member(req, "stream");
  return stream != NULL && u32_value(member(stream, "attempt"), attempt);
}

/**
 * Fails (and returns true for) a spawn that cannot be run as asked: its uid runs or is queued
 * already (EEXIST); 'stream' without --stream, or a uid too long for a frame; a NUL in a string the
 * kernel gets (EINVAL).
 */
static bool refused(const JVal *req, bool streamed) {
  const JVal *uid = member(req, "uid"), *args = member(req, "args"), *env = member(req, "env"),
             *files = member(req, "files");
  bool running = task_by_uid(uid->str, uid->len) != NULL;
  if (running || queued_by_uid(uid->str, uid->len) != NULL) {
    Buf m = {0};
    buf_str(&m, "task '");
    buf_add(&m, uid->str, uid->len);
    buf_str(&m, running ? "' is already running" : "' is already queued");
    emit_failed(uid->str, uid->len, "EEXIST", &m);
    free(m.p);
    return true;
  }
  if (streamed && stream_fd < 0) {
    fail_text(uid, "EINVAL", "output 'stream' needs a helper started with --stream");
    return true;
  }
  if (streamed && uid->len > 0xffff) {
    fail_text(uid, "EINVAL", "a uid of more than 65535 bytes does not fit in a stream frame");
    return true;
  }
  if (refuse_nul(uid, member(req, "executable"), "executable", -1)) return true;
  long i = 0;
  for (const JVal *a = args->kid; a != NULL; a = a->next, i++) {
    if (refuse_nul(uid, a, "args", i)) return true;
  }
  for (const JVal *m = env->kid; m != NULL; m = m->next) {
    if (memchr(m->key, '\0', m->klen) != NULL || has_nul(m)) {
      fail_text(uid, "EINVAL", "env contains a NUL byte");
      return true;
    }
  }
  if (refuse_nul(uid, member(req, "cwd"), "cwd", -1) ||
      (member(req, "mkdir") != NULL && refuse_nul(uid, member(req, "mkdir"), "mkdir", -1)) ||
      (!streamed && (refuse_nul(uid, member(req, "stdoutPath"), "stdoutPath", -1) ||
                     refuse_nul(uid, member(req, "stderrPath"), "stderrPath", -1)))) {
    return true;
  }
  i = 0;
  for (const JVal *f = files == NULL ? NULL : files->kid; f != NULL; f = f->next, i++) {
    if (refuse_nul(uid, member(f, "path"), "files.path", i)) return true;
  }
  const JVal *cgroups = member(req, "cgroups");
  i = 0;
  for (const JVal *c = cgroups == NULL ? NULL : cgroups->kid; c != NULL; c = c->next, i++) {
    if (refuse_nul(uid, c, "cgroups", i)) return true;
  }
  return false;
}

/*
 * The cgroup.procs files of the cgroup v1 directories moved into, kept open: the pool reuses a
 * few pids cgroups for every task (and the way back is the same each time), so two opens and
 * two closes per spawn become none. A write through a kept file that fails (its cgroup was
 * removed) is tried once more through the path.
 */
#define PROCS_KEPT 128
static struct {
  char *path;
  int fd;
} procs_kept[PROCS_KEPT];
static size_t procs_next; /* the slot the next new path takes (oldest first) */

/** Writes our pid into `<dir><rel>/cgroup.procs`: the helper moves there. 0 or an errno. */
static int move_into(const char *dir, const char *rel) {
  Buf p = {0};
  buf_str(&p, dir);
  buf_str(&p, rel);
  buf_str(&p, "/cgroup.procs");
  buf_char(&p, '\0');
  for (size_t i = 0; i < PROCS_KEPT; i++) {
    if (procs_kept[i].path == NULL || strcmp(procs_kept[i].path, p.p) != 0) continue;
    if (move_self(procs_kept[i].fd) == 0) {
      free(p.p);
      return 0;
    }
    close(procs_kept[i].fd); /* stale: opened again below */
    free(procs_kept[i].path);
    procs_kept[i].path = NULL;
    break;
  }
  int fd = open(p.p, O_WRONLY | O_CLOEXEC);
  int e = fd < 0 ? errno : move_self(fd);
  if (fd < 0 || e != 0) {
    if (fd >= 0) close(fd);
    free(p.p);
    return e;
  }
  size_t slot = procs_next;
  procs_next = (procs_next + 1) % PROCS_KEPT;
  if (procs_kept[slot].path != NULL) {
    close(procs_kept[slot].fd);
    free(procs_kept[slot].path);
  }
  procs_kept[slot].path = p.p;
  procs_kept[slot].fd = fd;
  return 0;
}

/** Back out of the first `n` of the cgroup v1 directories `dirs`: two levels up, where it was. */
static void leave_v1(const JVal *dirs, long n) {
  for (const JVal *d = dirs == NULL ? NULL : dirs->kid; d != NULL && n > 0; d = d->next, n--) {
    if (move_into(d->str, "/../..") != 0) die("cannot move back out of a task's cgroup");
  }
}

/**
 * SpawnSpec.cgroups: moves the helper into each cgroup v1 directory (made and limited by the
 * pool, `<own>/<base>/<task>`), so the task starts inside them. False once the failure is
 * emitted (and the helper is back where it was).
 */
static bool enter_v1(const JVal *uid, const JVal *dirs) {
  long n = 0;
  for (const JVal *d = dirs == NULL ? NULL : dirs->kid; d != NULL; d = d->next, n++) {
    int e = move_into(d->str, "");
    if (e == 0) continue;
    leave_v1(dirs, n);
    fail_path(uid, e, "cannot enter the task's cgroup", d->str, d->len, ": ");
    return false;
  }
  return true;
}

/**
 * Where the task's stdout and stderr go, into `fds`: its files (made 0600), or for a 'stream'
 * spawn the write ends of its pipes, whose output *o reads. False once the failure is emitted.
 */
static bool open_outputs(const JVal *req, const uint32_t *attempt, int fds[2], Output **o) {
  const JVal *uid = member(req, "uid");
  *o = NULL;
  if (attempt != NULL) {
    unsigned long long cap = stream_cap;
    (void)count_value(member(member(req, "stream"), "capBytes"), &cap);
    *o = output_new(uid->str, uid->len, *attempt, cap, fds);
    if (*o != NULL) return true;
    int e = errno;
    Buf m = {0};
    buf_str(&m, "cannot make the output pipes: ");
    errno_text(&m, e);
    emit_failed(uid->str, uid->len, errno_name(e), &m);
    free(m.p);
    return false;
  }
  const JVal *outs[2] = {member(req, "stdoutPath"), member(req, "stderrPath")};
  for (int k = 0; k < 2; k++) {
    fds[k] = open_output(outs[k]->str);
    if (fds[k] < 0) {
      int e = errno;
      fail_path(uid, e, "cannot open", outs[k]->str, outs[k]->len, " for writing: ");
      if (k == 1) close(fds[0]);
      return false;
    }
  }
  return true;
}

/** Starts a spawn request: its task, or NULL once its failure is emitted. */
static Task *do_spawn(const JVal *req) {
  const JVal *uid = member(req, "uid"), *exe = member(req, "executable"),
             *args = member(req, "args"), *env = member(req, "env"), *cwd = member(req, "cwd"),
             *files = member(req, "files"), *scope = member(req, "killScope");
  uint32_t attempt;
  bool streamed = stream_attempt(req, &attempt);
  if (refused(req, streamed)) return NULL;

  const JVal *dir = member(req, "mkdir");
  if (dir != NULL && !take_spare(dir->str) && mkdir(dir->str, 0700) != 0 && errno != EEXIST) {
    int e = errno;
    fail_path(uid, e, "cannot make the task directory", dir->str, dir->len, ": ");
    return NULL;
  }
  for (const JVal *f = files == NULL ? NULL : files->kid; f != NULL; f = f->next) {
    const JVal *path = member(f, "path"), *content = member(f, "content");
    int e = write_file(path->str, content->str, content->len);
    if (e != 0) {
      fail_path(uid, e, "cannot write", path->str, path->len, ": ");
      return NULL;
    }
  }
  int fds[2] = {-1, -1};
  Output *o;
  if (!open_outputs(req, streamed ? &attempt : NULL, fds, &o)) return NULL;

  char **argv = arena_alloc((args->count + 2) * sizeof *argv);
  argv[0] = exe->str;
  long i = 1;
  for (const JVal *a = args->kid; a != NULL; a = a->next) argv[i++] = a->str;
  argv[i] = NULL;
  pid_t pid = -1;
  bool cwd_failed = false, process_only = str_is(scope, "process");
  unsigned long serial = ++next_serial;
  bool memory = false;
  int moved = enter_for_spawn(uid, serial, process_only, member(req, "cgroupLimits"), &memory);
  const JVal *cgroups = member(req, "cgroups");
  if (moved != -2 && !enter_v1(uid, cgroups)) {
    if (moved >= 0) {
      if (move_self(cg_home_procs) != 0) die("cannot move back into the helper's cgroup");
      close(moved);
      if (!process_only) cg_remove(serial);
    }
    moved = -2; /* its failure is emitted */
  }
  int e = 0;
  if (moved != -2) {
    /* `cpus` (fork): the helper pins itself around posix_spawn; the child inherits the mask */
    const JVal *cpus = member(req, "cpus");
    cpu_set_t pin;
    bool pinned = false;
    if (is_str(cpus)) {
      pinned = parse_cpulist(cpus, &pin) && sched_setaffinity(0, sizeof pin, &pin) == 0;
      if (!pinned) dprintf(fds[1], "pf-spawner: runs unpinned: cannot pin to CPUs %s\n", cpus->str);
    }
    e = spawn_task(&pid, exe, argv, env, serial, cwd->str, fds[0], fds[1], &cwd_failed);
    if (pinned && sched_setaffinity(0, sizeof home_cpus, &home_cpus) != 0) die("sched_setaffinity");
    leave_v1(cgroups, cgroups == NULL ? 0 : (long)cgroups->count);
    if (moved >= 0) {
      if (move_self(cg_home_procs) != 0) die("cannot move back into the helper's cgroup");
      close(moved);
    }
  }
  close(fds[0]); /* the task's ends: only the task holds them now */
  close(fds[1]);
  if (moved == -2 || e != 0) {
    if (o != NULL) output_free(o); /* it never ran: no frames */
    if (moved == -2) return NULL;
    (void)task_ended(serial, 0, process_only, moved >= 0 && !process_only); /* its cgroup */
    if (cwd_failed) {
      fail_cwd(uid, e, cwd->str, cwd->len);
    } else {
      Buf m = {0};
      errno_text(&m, e);
      emit_failed(uid->str, uid->len, errno_name(e), &m);
      free(m.p);
    }
    return NULL;
  }
  emit_started(uid->str, uid->len, pid);
  Task *t = task_add(uid->str, uid->len, pid, process_only, serial, moved >= 0 && !process_only, o);
  t->mem_limited = memory;
  if (dir != NULL && member(req, "recycle") != NULL && member(req, "recycle")->type == J_TRUE) {
    t->recycle_dir = xmalloc(dir->len + 1);
    memcpy(t->recycle_dir, dir->str, dir->len + 1);
  }
  return t;
}

/**
 * Starts the spawns of `line`, whose task was reaped or never started, in order, as if each came
 * now; when one cannot start, those behind it start too. Each that starts takes its followers.
 */
static void start_line(Followers line) {
  while (line.head != NULL) {
    Queued *q = line.head;
    line.head = q->next;
    if (line.head == NULL) line.tail = NULL;
    /* out of the uid table first: its own spawn must not find it queued (EEXIST) */
    Followers behind = q->behind;
    char *req = q->req;
    size_t rlen = q->rlen;
    q->req = NULL;
    queued_free(q);
    JVal *m = parse_json(req, rlen); /* valid: it was checked when it came */
    Task *t = m != NULL ? do_spawn(m) : NULL;
    free(req);
    if (t != NULL) {
      followers_move(&t->behind, &behind);
    } else if (behind.head != NULL) {
      behind.tail->next = line.head;
      if (line.head == NULL) line.tail = behind.tail;
      line.head = behind.head;
    }
  }
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
  const JVal *stream = member(m, "stream"), *so = member(m, "stdoutPath"),
             *se = member(m, "stderrPath");
  uint32_t attempt;
  if (!is_str(member(m, "uid")) || !is_str(member(m, "executable")) ||
      !is_str(member(m, "cwd"))) {
    return false;
  }
  /* files: both paths; 'stream': an attempt, and no paths */
  if (stream == NULL ? !is_str(so) || !is_str(se)
                     : stream->type != J_OBJ || !u32_value(member(stream, "attempt"), &attempt) ||
                           so != NULL || se != NULL) {
    return false;
  }
  unsigned long long cap;
  if (stream != NULL && member(stream, "capBytes") != NULL &&
      !count_value(member(stream, "capBytes"), &cap)) {
    return false;
  }
  if (args == NULL || args->type != J_ARR || !all_strings(args)) return false;
  if (env == NULL || env->type != J_OBJ || !all_strings(env)) return false;
  if (scope != NULL && !str_is(scope, "process")) return false;
  if (member(m, "after") != NULL && !is_str(member(m, "after"))) return false;
  const JVal *cgroups = member(m, "cgroups");
  if (cgroups != NULL && (cgroups->type != J_ARR || !all_strings(cgroups))) return false;
  const JVal *limits = member(m, "cgroupLimits");
  if (limits != NULL && (limits->type != J_OBJ || !all_strings(limits))) return false;
  if (member(m, "mkdir") != NULL && !is_str(member(m, "mkdir"))) return false;
  const JVal *recycle = member(m, "recycle");
  if (recycle != NULL && recycle->type != J_TRUE && recycle->type != J_FALSE) return false;
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

/** A spawn "after" a task that runs or is queued here waits behind it; any other starts now. */
static void spawn_or_queue(const JVal *m, const char *req, size_t rlen) {
  const JVal *uid = member(m, "uid"), *after = member(m, "after");
  Followers *line = is_str(after) ? line_of(after->str, after->len) : NULL;
  bool duplicate = task_by_uid(uid->str, uid->len) != NULL ||
                   queued_by_uid(uid->str, uid->len) != NULL; /* do_spawn fails it: EEXIST */
  if (line != NULL && !duplicate) enqueue(uid->str, uid->len, req, rlen, line);
  else do_spawn(m);
}

/** The line as it came, kept for a spawn that is queued: parsing decodes `line` in place. */
static Buf raw;

static void emit_status(void);

static void handle_line(char *line, size_t n) {
  if (stopping) return; /* after an end, nothing more is asked */
  size_t a = 0;
  while (a < n && isspace((unsigned char)line[a])) a++;
  if (a == n) return;
  raw.len = 0;
  buf_add(&raw, line, n);
  /* Quote the line as it came. */
  const char *quote = raw.p;
  size_t qn = n < 4 * QUOTE_UNITS ? n : 4 * QUOTE_UNITS;
  JVal *m = parse_json(line, n);
  if (m == NULL) {
    bad_line("not JSON: ", quote, qn);
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "spawn") && valid_spawn(m)) {
    spawn_or_queue(m, raw.p, raw.len);
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "kill") &&
             is_str(member(m, "uid")) && kill_signal(member(m, "signal")) != 0) {
    const JVal *uid = member(m, "uid");
    Task *t = task_by_uid(uid->str, uid->len);
    Queued *q = t == NULL ? queued_by_uid(uid->str, uid->len) : NULL;
    if (t != NULL) queue_kill(t, kill_signal(member(m, "signal")));
    else if (q != NULL) cancel_queued(q);
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "end")) {
    stop();
  } else if (m->type == J_OBJ && str_is(member(m, "op"), "status")) {
    emit_status();
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
  ssize_t n = read(master_in, in.p + in.len, in.cap - in.len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0 && keep_path != NULL) {
    master_detach(); /* the master is gone: its tasks run on for the next one */
    return;
  }
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
  if (raw.cap > ((size_t)4 << 20)) {
    free(raw.p);
    raw = (Buf){0};
  }
  flush_kills();
}

/* ------------------------------------------------------------------------------------------ */
/* Keep mode (--keep PATH --keep-ms N), and status                                             */
/*                                                                                            */
/* The master is whoever sends the requests and reads the events: the pool, through stdin and */
/* stdout, at first. With --keep its loss detaches the helper instead of stopping it: the     */
/* events stay in `out` (flush_output writes nothing while master_out is -1), and the socket  */
/* keep_path listens until a master connects (it gets a ready event marked reattached, then   */
/* what was held, then the protocol runs over the connection) or keep_ms pass (stop()). The   */
/* status event's `ended` comes from a ring of the last RECENT_MAX exited and failed events,  */
/* kept as they were sent, so a master that follows one that died mid-way can learn exits    */
/* the dead one read and never passed on.                                                     */

#define RECENT_MAX 1024

static long long keep_ms = -1;
/** The socket listening at keep_path while detached, else -1. */
static int keep_fd = -1;
static Buf recent[RECENT_MAX];
static size_t recent_next, recent_n;

/** Remembers the event line just built in `out` from `from` on (without its newline). */
static void recent_add(size_t from) {
  Buf *b = &recent[recent_next];
  b->len = 0; /* the slot keeps its memory: no allocation per event once the ring is full */
  buf_add(b, out.p + from, out.len - from - 1);
  recent_next = (recent_next + 1) % RECENT_MAX;
  if (recent_n < RECENT_MAX) recent_n++;
}

/** {"ev":"status",...}: the tasks whose main process runs, the queued spawns, recent ends. */
static void emit_status(void) {
  urgent = true; /* never held */
  buf_str(&out, "{\"ev\":\"status\",\"running\":[");
  const char *sep = "";
  for (size_t i = 0; i < n_buckets; i++) {
    for (const Task *t = by_uid[i]; t != NULL; t = t->next_uid, sep = ",") {
      buf_str(&out, sep);
      buf_str(&out, "{\"uid\":");
      buf_json(&out, t->uid, t->ulen);
      buf_str(&out, ",\"pid\":");
      buf_long(&out, (long)t->pid);
      buf_char(&out, '}');
    }
  }
  buf_str(&out, "],\"queued\":[");
  sep = "";
  for (size_t i = 0; i < q_buckets; i++) {
    for (const Queued *q = queued[i]; q != NULL; q = q->next_uid, sep = ",") {
      buf_str(&out, sep);
      buf_json(&out, q->uid, q->ulen);
    }
  }
  buf_str(&out, "],\"ended\":[");
  for (size_t k = 0; k < recent_n; k++) {
    const Buf *b = &recent[(recent_next + RECENT_MAX - recent_n + k) % RECENT_MAX];
    if (k > 0) buf_char(&out, ',');
    buf_add(&out, b->p, b->len);
  }
  buf_str(&out, "]}\n");
}

static void keep_unlisten(void) {
  if (keep_fd < 0) return;
  close(keep_fd);
  keep_fd = -1;
  unlink(keep_path);
}

/** Listens at keep_path, made 0600 (a stale socket there removed); false, said, if it cannot. */
static bool keep_listen(void) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, keep_path, strlen(keep_path)); /* shorter than sun_path: parse_args */
  const char *step = "cannot create a socket for";
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    unlink(keep_path);
    mode_t mask = umask(0177); /* 0600 from the start: no moment open to others */
    int r = bind(fd, (struct sockaddr *)&a, sizeof a);
    umask(mask);
    step = r != 0 ? "cannot bind" : listen(fd, 8) != 0 ? "cannot listen at" : NULL;
  }
  if (step == NULL) {
    keep_fd = fd;
    return true;
  }
  int e = errno;
  if (fd >= 0) close(fd);
  emit_errno(step, keep_path, e); /* held: for the record; stderr may still have a reader */
  fprintf(stderr, "pf-spawner: %s the keep socket '%s': %s\n", step, keep_path, strerror(e));
  return false;
}

/**
 * The master is gone (--keep): stdin and stdout become /dev/null (the old pipes are let go) or
 * the connection is closed, the partial request line is dropped, and the socket listens until
 * keep_ms from now. One that cannot listen stops the helper, as without --keep.
 */
static void master_detach(void) {
  if (master_in == STDIN_FILENO) {
    int null = open("/dev/null", O_RDWR); /* >= 3: ensure_std_fds */
    if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0) {
      die("cannot put /dev/null in place of stdin and stdout");
    }
    close(null);
  } else {
    close(master_in);
  }
  master_in = master_out = -1;
  in.len = scanned = 0;
  discarding = false;
  held_at = 0;
  urgent = false;
  if (!keep_listen()) {
    stop();
    return;
  }
  keep_deadline = now_ms() + keep_ms;
}

/** A write to the master failed after `off` bytes of `out`: the rest is held, from the line cut. */
static void master_write_failed(size_t off) {
  size_t from = off;
  while (from > 0 && out.p[from - 1] != '\n') from--;
  memmove(out.p, out.p + from, out.len - from);
  out.len -= from;
  master_detach();
}

static bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

/** A master connects: its ready event now, first; what was held at this turn's end, at once. */
static void keep_accept(void) {
  int fd = accept4(keep_fd, NULL, NULL, SOCK_CLOEXEC); /* blocking, as the pipes were */
  if (fd < 0) return; /* gone before it was accepted: wait for another */
  Buf ready = {0};
  emit_ready(&ready, cg_home >= 0, mark_prefix, &cg_why, true);
  bool sent = write_all(fd, ready.p, ready.len);
  free(ready.p);
  if (!sent) {
    close(fd);
    return;
  }
  keep_unlisten(); /* one master at a time: later ones find no socket */
  master_in = master_out = fd;
  keep_deadline = 0;
  urgent = true;
}

/** No master came within keep_ms of the loss: the end of a helper without --keep. */
static void keep_timer(void) {
  if (keep_deadline != 0 && now_ms() >= keep_deadline) {
    keep_deadline = 0;
    stop();
  }
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
    Output *o = t->output;
    if (o != NULL) output_exit(o); /* its frames first, then the exit with its tails */
    char tmp[16];
    long oom = t->mem_limited ? oom_kills(t->serial) : 0; /* before task_ended removes it */
    /* SIGTERM what it left; an own directory it left empty, after a clean exit, is a spare */
    bool clean = task_ended(t->serial, t->pid, t->process_only, t->has_cg);
    bool recycled = clean && t->recycle_dir != NULL && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
                    keep_spare(t->recycle_dir);
    if (WIFSIGNALED(st)) {
      const char *sig = signal_name(WTERMSIG(st), tmp, sizeof tmp);
      emit_exited(t->uid, t->ulen, 0, sig, o, oom, clean, recycled);
    } else {
      emit_exited(t->uid, t->ulen, WEXITSTATUS(st), NULL, o, oom, clean, recycled);
    }
    Followers line = t->behind;
    task_remove(t);
    if (o != NULL) {
      o->exited = true;
      output_check(o); /* its end frame, unless leftovers still hold a pipe */
    }
    start_line(line); /* at once: the slots it held never idle */
  }
  arena_reset();
}

/**
 * SIGKILLs every task (each with its kill scope) and everything ended tasks left, and stops
 * reading; main exits once every task has exited and every task cgroup is gone.
 */
static void stop(void) {
  if (stopping) return;
  stopping = true;
  keep_unlisten();
  keep_deadline = 0;
  cancel_all_queued();
  n_targets = 0;
  for (size_t i = 0; i < n_buckets; i++) {
    for (Task *t = by_uid[i]; t != NULL; t = t->next_uid) queue_kill(t, SIGKILL);
  }
  for (size_t i = lingers.n; i-- > 0;) {
    linger_kill(i);
  }
  for (size_t i = 0; i < ended.n; i++) {
    target_add(ended_sid(ended.v[i].sid), ended.v[i].serial, SIGKILL, false);
  }
  ended.n = 0;
  sweep_at = 0;
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

/** Base 36 of `v` into `buf` (as JavaScript's toString(36)). */
static void base36(char *buf, size_t n, unsigned long long v) {
  char tmp[32];
  size_t k = 0;
  do tmp[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
  while ((v /= 36) != 0 && k < sizeof tmp);
  size_t i = 0;
  while (k > 0 && i + 1 < n) buf[i++] = tmp[--k];
  buf[i] = '\0';
}

/**
 * --cgroup BASE, --kill-grace-ms N, --stream PATH, --hold-ms N, --keep PATH --keep-ms N (both or
 * neither); anything else stops the helper (exit 64).
 */
static void parse_args(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc) {
      cg_base = argv[++i];
    } else if (strcmp(argv[i], "--cgroup-limits") == 0) {
      cg_limits = true;
    } else if (strcmp(argv[i], "--cgroup-outer") == 0 && i + 1 < argc) {
      cg_outer = argv[++i];
    } else if (strcmp(argv[i], "--kill-grace-ms") == 0 && i + 1 < argc &&
               (kill_grace_ms = strtoll(argv[++i], &end, 10)) >= 0 && *end == '\0') {
      continue;
    } else if (strcmp(argv[i], "--stream") == 0 && i + 1 < argc) {
      stream_path = argv[++i];
    } else if (strcmp(argv[i], "--stream-cap-bytes") == 0 && i + 1 < argc &&
               (stream_cap = strtoull(argv[++i], &end, 10)) > 0 && *end == '\0') {
      continue;
    } else if (strcmp(argv[i], "--stream-rotate-bytes") == 0 && i + 1 < argc &&
               (stream_rotate = strtoull(argv[++i], &end, 10)) > 0 && *end == '\0') {
      continue;
    } else if (strcmp(argv[i], "--stream-keep-bytes") == 0 && i + 1 < argc &&
               (stream_keep = strtoull(argv[++i], &end, 10)) > 0 && *end == '\0') {
      continue;
    } else if (strcmp(argv[i], "--hold-ms") == 0 && i + 1 < argc &&
               (hold_ms = strtoll(argv[++i], &end, 10)) >= 0 && *end == '\0') {
      continue;
    } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc && argv[i + 1][0] != '\0') {
      keep_path = argv[++i];
    } else if (strcmp(argv[i], "--keep-ms") == 0 && i + 1 < argc &&
               (keep_ms = strtoll(argv[++i], &end, 10)) >= 0 && *end == '\0') {
      continue;
    } else {
      keep_ms = -2; /* bad: the usage below */
      break;
    }
  }
  if (keep_ms == -2 || (keep_path == NULL) != (keep_ms < 0)) {
    fprintf(stderr, "pf-spawner: bad arguments (usage: pf-spawner [--cgroup BASE "
                    "[--cgroup-limits] [--cgroup-outer DIR]] [--kill-grace-ms N] "
                    "[--stream PATH] [--hold-ms N] [--keep PATH --keep-ms N])\n");
    exit(64);
  }
  if (keep_path != NULL && strlen(keep_path) >= sizeof ((struct sockaddr_un *)NULL)->sun_path) {
    fprintf(stderr, "pf-spawner: --keep '%s': a socket path must be shorter than %zu bytes\n",
            keep_path, sizeof ((struct sockaddr_un *)NULL)->sun_path);
    exit(64);
  }
  if (cg_base != NULL) cgroup_setup(cg_base);
}

int main(int argc, char **argv) {
  ensure_std_fds();
  struct timespec start;
  clock_gettime(CLOCK_REALTIME, &start);
  char when[32];
  base36(when, sizeof when, (unsigned long long)start.tv_sec * 1000 + start.tv_nsec / 1000000);
  snprintf(mark_prefix, sizeof mark_prefix, "pf.%ld.%s.", (long)getpid(), when);
  parse_args(argc, argv);
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
  if (stream_path != NULL) stream_open();

  emit_ready(&out, cg_home >= 0, mark_prefix, &cg_why, false);
  flush_output();

  struct pollfd *fds = NULL;
  size_t cap_fds = 0;
  while (!(stopping && n_tasks == 0 && lingers.n == 0)) {
    /* signals, the master (until stopping), the pipes of 'stream' tasks (one epoll set), and the
       cgroup.events of each lingering cgroup */
    if (3 + lingers.n > cap_fds) {
      cap_fds = 2 * (3 + lingers.n);
      fds = xrealloc(fds, cap_fds * sizeof *fds);
    }
    fds[0] = (struct pollfd){sigfd, POLLIN, 0};
    /* the master's input, or while detached (--keep) the socket a master connects to */
    fds[1] = (struct pollfd){stopping ? -1 : master_in >= 0 ? master_in : keep_fd, POLLIN, 0};
    fds[2] = (struct pollfd){epfd, POLLIN, 0};
    size_t polled = lingers.n;
    for (size_t i = 0; i < polled; i++) {
      fds[3 + i] = (struct pollfd){lingers.v[i].events, POLLPRI, 0};
    }
    int r = poll(fds, 3 + polled, poll_timeout());
    if (r < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    /* before reap, which may end outputs: no event read here points at a freed pipe */
    if (fds[2].revents != 0) output_ready();
    for (size_t i = polled; i-- > 0;) {
      if (fds[3 + i].revents != 0 && lingers.v[i].events >= 0) linger_check(i);
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
    if (!stopping && fds[1].revents != 0) {
      if (master_in >= 0) handle_input();
      else keep_accept();
    }
    run_timers();
    keep_timer();
    flush_frames(); /* before the events: an exit event follows its task's frames */
    if (!holding()) flush_output();
  }
  outputs_finish();
  flush_frames();
  cgroup_leave();
  spares_drop();
  flush_output();
  return 0;
}
