/* Generated from schemas/reason.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Why a task or pilot failed or was canceled, in words a person can act on.
 */
export interface Reason {
  /**
   * One of the codes of src/states/reason-codes.ts (docs/reason-codes.md).
   */
  code:
    | 'E_AGENT_DIED'
    | 'E_AGENT_SILENT'
    | 'E_BAD_MESSAGE'
    | 'E_BAD_REQUEST'
    | 'E_CANCELED'
    | 'E_DEPENDENCY'
    | 'E_EXEC_FAILED'
    | 'E_EXEC_NOT_FOUND'
    | 'E_EXEC_PERMISSION'
    | 'E_EXIT_CODE'
    | 'E_FUNCTION_IMPORT'
    | 'E_FUNCTION_RESULT'
    | 'E_FUNCTION_THREW'
    | 'E_JOB_CANCELED'
    | 'E_JOB_FAILED'
    | 'E_LAUNCH'
    | 'E_LAUNCH_METHOD'
    | 'E_LAUNCH_SLOTS'
    | 'E_MODE_UNSUPPORTED'
    | 'E_NEVER_ACTIVE'
    | 'E_NEVER_FITS'
    | 'E_NO_EXIT_CODE'
    | 'E_NO_PILOT'
    | 'E_NO_PILOT_TIME'
    | 'E_NO_SANDBOX'
    | 'E_NO_SUCH_PILOT'
    | 'E_OUTPUT_LOST'
    | 'E_OUT_OF_MEMORY'
    | 'E_PILOT_DRAINS'
    | 'E_PILOT_ENDED'
    | 'E_POST_EXEC'
    | 'E_PRE_EXEC'
    | 'E_RUNTIME_EXCEEDED'
    | 'E_SERVICE_EXITED'
    | 'E_SERVICE_NOT_READY'
    | 'E_SERVICE_PORT'
    | 'E_SERVICE_UNHEALTHY'
    | 'E_SIGNALED'
    | 'E_STAGING'
    | 'E_TASK_TIMEOUT'
    | 'E_TOO_LARGE'
    | 'E_UNSUPPORTED'
    | 'E_WORKER_DIED'
    | 'E_WORKER_START'
    | 'I_PILOT_DONE';
  message: string;
  component: string;
  detail?: {};
}
