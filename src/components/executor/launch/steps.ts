import type { Reason, TaskDescription, TaskRecord } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';

/**
 * A task's preExec and postExec lines. They run in the shell that starts the executable, per
 * rank (as RADICAL-Pilot's pre_exec and post_exec), so what they export or source is the
 * executable's environment; docs/launch-methods.md, "preExec and postExec".
 */
export interface TaskSteps {
  pre: readonly string[];
  post: readonly string[];
}

/** Where each rank's wrapper writes what failed: `<sandbox>/exec-status.<rank>`. */
export const STEP_STATUS_FILE = 'exec-status';

/**
 * The task's lines; undefined when it has none, so such a task starts exactly as without the
 * fields (no shell in between: the hot path of one-line tasks).
 */
export function taskSteps(d: TaskDescription): TaskSteps | undefined {
  const { preExec: pre, postExec: post } = d;
  if ((pre === undefined || pre.length === 0) && (post === undefined || post.length === 0)) {
    return undefined;
  }
  return { pre: pre ?? [], post: post ?? [] };
}

/**
 * The POSIX sh run as `sh -c STEPS_SCRIPT $0 <status> <nPost> <post...> <nPre> <pre...>
 * <executable> <args...>`. The lines travel as arguments (no quoting: each arrives as given),
 * the post lines are kept in variables, and what is left in "$@" is the task's own argv,
 * untouched. Each line is `eval`ed in a function (its "$@" is empty; a `set --` cannot reach
 * the task's argv), in this shell: exports, `cd`, `. venv/bin/activate` reach the executable.
 * dash has no `source`: it is defined as `.` where missing.
 *
 * The status file (`<status>.<rank>`, emptied first) gets one line per failure,
 * `<step> <index|-> <code>`, so the agent reads which part failed from a file the task's output
 * cannot fake by accident: `pre i c` (line i failed: the executable does not run), `exec - c`
 * (the shell could not exec it: 126, 127), `exe - c` (it exited c), `post i c`. An EXIT trap
 * records a line that left the shell (`exit`, `set -e`) as a failure of that line.
 *
 * Without postExec the shell execs the executable (its pid, exit code and signal are the
 * task's); with postExec it waits for it, and the task's exit code is the executable's (a
 * signal shows as 128+N, as in any shell), else that of the first failing postExec line.
 */
export const STEPS_SCRIPT = [
  '__pf_st=$1.${PF_RANK:-0} __pf_np=$2',
  'shift 2',
  '__pf_i=0',
  'while [ "$__pf_i" -lt "$__pf_np" ]; do',
  '  eval "__pf_post$__pf_i=\\$1"',
  '  shift',
  '  __pf_i=$((__pf_i + 1))',
  'done',
  '__pf_n=$1',
  'shift',
  '{ : >"$__pf_st"; } 2>/dev/null',
  '__pf_note() { printf \'%s %s %s\\n\' "$1" "$2" "$3" >>"$__pf_st"; } 2>/dev/null',
  '__pf_run() { eval "$__pf_line"; }',
  'command -v source >/dev/null 2>&1 || source() { . "$@"; }',
  '__pf_left() {',
  '  __pf_c=$1',
  '  case $__pf_step in',
  '  done) return 0 ;;',
  '  exec) __pf_note exec - "$__pf_c" ;;',
  '  *) __pf_note "$__pf_step" "$__pf_i" "$__pf_c" ;;',
  '  esac',
  '  __pf_step=done',
  '  [ "$__pf_x" -eq 0 ] || exit "$__pf_x"',
  '  [ "$__pf_c" -eq 0 ] || exit "$__pf_c"',
  '  exit 1',
  '}',
  '__pf_x=0 __pf_step=pre __pf_i=0',
  "trap '__pf_left $?' EXIT",
  'while [ "$__pf_i" -lt "$__pf_n" ]; do',
  '  __pf_line=$1',
  '  shift',
  '  __pf_run || { __pf_c=$?; __pf_note pre "$__pf_i" "$__pf_c"; __pf_step=done; exit "$__pf_c"; }',
  '  __pf_i=$((__pf_i + 1))',
  'done',
  'if [ "$__pf_np" -eq 0 ]; then',
  '  __pf_step=exec',
  '  exec "$@"',
  'fi',
  '__pf_step=exe',
  '( trap \'__pf_note exec - $?\' EXIT; exec "$@" ) || { __pf_x=$?; __pf_note exe - "$__pf_x"; }',
  '__pf_step=post __pf_i=0',
  'while [ "$__pf_i" -lt "$__pf_np" ]; do',
  '  eval "__pf_line=\\$__pf_post$__pf_i"',
  '  __pf_run || {',
  '    __pf_c=$?',
  '    __pf_note post "$__pf_i" "$__pf_c"',
  '    __pf_step=done',
  '    [ "$__pf_x" -ne 0 ] || exit "$__pf_c"',
  '    exit "$__pf_x"',
  '  }',
  '  __pf_i=$((__pf_i + 1))',
  'done',
  '__pf_step=done',
  'exit "$__pf_x"',
].join('\n');

/** The status prefix of a task whose sandbox is `workDir`. */
export function stepStatusPrefix(workDir: string): string {
  return `${workDir}/${STEP_STATUS_FILE}`;
}

/**
 * The program of a task run as processes. Every such task has one: the schema requires it
 * unless the mode is 'function', whose tasks the process kind never takes.
 */
export function executableOf(d: TaskDescription): string {
  if (d.executable === undefined) throw new TypeError('a process task without an executable');
  return d.executable;
}

/** What STEPS_SCRIPT reads after $0: the status prefix, the lines, then the task's argv. */
export function stepsArgv(steps: TaskSteps, workDir: string, d: TaskDescription): string[] {
  return [
    stepStatusPrefix(workDir),
    String(steps.post.length),
    ...steps.post,
    String(steps.pre.length),
    ...steps.pre,
    executableOf(d),
    ...(d.arguments ?? []),
  ];
}

export type StepName = 'pre' | 'exec' | 'exe' | 'post';

/** What failed in one rank: its status file's first line. */
export interface StepFailure {
  rank: number;
  step: StepName;
  /** The line's index in preExec or postExec (pre, post). */
  index?: number;
  code: number;
}

const STATUS_LINE = /^(pre|exec|exe|post) (-|\d+) (\d+)$/;

/** The first failure a rank's status file names; undefined when none (or not ours). */
export function parseStepStatus(text: string, rank: number): StepFailure | undefined {
  const m = STATUS_LINE.exec(text.split('\n', 1)[0] ?? '');
  if (m === null) return undefined;
  const f: StepFailure = { rank, step: m[1] as StepName, code: Number(m[3]) };
  if (m[2] !== '-') f.index = Number(m[2]);
  return f;
}

/** Which failure names the task's: a preExec (nothing ran) before an exec, an exit, a postExec. */
const PRECEDENCE: readonly StepName[] = ['pre', 'exec', 'exe', 'post'];

const LINE_CHARS = 200;

/**
 * The task's reason from its ranks' failures: E_PRE_EXEC, E_POST_EXEC (the executable exited 0),
 * E_EXEC_NOT_FOUND or E_EXEC_PERMISSION; undefined for the executable's own non-zero exit, which
 * the ManagerOutputStager words as any exit code (E_EXIT_CODE), or when nothing is known.
 */
export function stepsReason(
  task: TaskRecord,
  failures: readonly StepFailure[],
): Reason | undefined {
  const first = [...failures].sort(
    (a, b) => PRECEDENCE.indexOf(a.step) - PRECEDENCE.indexOf(b.step) || a.rank - b.rank,
  )[0];
  if (first === undefined || first.step === 'exe') return undefined;
  const d = task.description;
  const onRank = (d.ranks ?? 1) > 1 ? ` on rank ${first.rank}` : '';
  const detail: Record<string, unknown> = { exitCode: first.code };
  if ((d.ranks ?? 1) > 1) detail.rank = first.rank;
  if (first.step === 'exec') {
    const missing = first.code === 127;
    return {
      code: missing
        ? 'E_EXEC_NOT_FOUND'
        : first.code === 126
          ? 'E_EXEC_PERMISSION'
          : 'E_EXEC_FAILED',
      message: `cannot execute '${d.executable}'${onRank}: ${missing ? 'not found' : 'not executable'} (the shell's exec exited ${first.code})`,
      component: COMPONENTS.executor,
      detail,
    };
  }
  const field = first.step === 'pre' ? 'preExec' : 'postExec';
  const index = first.index ?? 0;
  const line = (first.step === 'pre' ? d.preExec : d.postExec)?.[index] ?? '';
  const shown = line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS)}...` : line;
  const how = first.code === 0 ? 'left the shell' : `failed with exit code ${first.code}`;
  const after = first.step === 'pre' ? ': the executable did not run' : '';
  return {
    code: first.step === 'pre' ? 'E_PRE_EXEC' : 'E_POST_EXEC',
    message: `${field}[${index}] '${shown}' ${how}${onRank}${after}`,
    component: COMPONENTS.executor,
    detail: { ...detail, [field]: index, line },
  };
}
