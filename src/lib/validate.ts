import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { ValidationError, type ValidationIssue } from '../errors';
import type {
  AgentConfig,
  ControlMessage,
  Notification,
  NotificationBulk,
  PilotDescription,
  SessionOptionsInput,
  StoreReply,
  StoreRequest,
  TaskBulk,
  TaskDescription,
  TaskRecord,
  Workload,
} from '../generated';
import agentConfig from '../../schemas/agent-config.schema.json';
import controlMessage from '../../schemas/control-message.schema.json';
import notification from '../../schemas/notification.schema.json';
import notificationBulk from '../../schemas/notification-bulk.schema.json';
import pilotDescription from '../../schemas/pilot-description.schema.json';
import reason from '../../schemas/reason.schema.json';
import sessionOptions from '../../schemas/session-options.schema.json';
import storeReply from '../../schemas/store-reply.schema.json';
import storeRequest from '../../schemas/store-request.schema.json';
import taskBulk from '../../schemas/task-bulk.schema.json';
import taskDescription from '../../schemas/task-description.schema.json';
import taskRecord from '../../schemas/task-record.schema.json';
import workload from '../../schemas/workload.schema.json';

// One Ajv per process, every schema compiled once at module load.
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);
ajv.addSchema([
  reason,
  taskDescription,
  pilotDescription,
  taskRecord,
  taskBulk,
  notification,
  notificationBulk,
  storeRequest,
  storeReply,
  controlMessage,
  agentConfig,
  workload,
  sessionOptions,
]);

function compiled(schema: { $id: string }): ValidateFunction {
  const v = ajv.getSchema(schema.$id);
  if (v === undefined) throw new Error(`schema ${schema.$id} not registered`);
  return v;
}

/** Turns ajv's errors into issues that name the JSON path and what was allowed. */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined): ValidationIssue[] {
  return (errors ?? []).map((e) => {
    const path = e.instancePath || '/';
    const p = e.params as Record<string, unknown>;
    let message = e.message ?? 'invalid';
    if (e.keyword === 'additionalProperty') {
      message = `must not have property '${String(p.additionalProperty)}'`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    }
    return { path, message };
  });
}

/** oneOf reports every branch; keep the branch whose discriminator matched, if any. */
function narrowOneOf(issues: ValidationIssue[], errors: readonly ErrorObject[]): ValidationIssue[] {
  const constMiss = new Set(
    errors.filter((e) => e.keyword === 'const').map((e) => e.schemaPath.split('/properties/')[0]),
  );
  if (constMiss.size === 0) return issues;
  const kept = errors.filter(
    (e) => e.keyword !== 'oneOf' && !constMiss.has(e.schemaPath.split('/properties/')[0]),
  );
  return kept.length > 0 ? describeErrors(kept) : issues;
}

function parser<T>(name: string, schema: { $id: string }): (input: unknown) => T {
  const validate = compiled(schema);
  return (input: unknown): T => {
    if (validate(input)) return input as T;
    const errors = validate.errors ?? [];
    const issues = narrowOneOf(describeErrors(errors), errors);
    const text = issues.map((i) => `${i.path} ${i.message}`).join('; ');
    throw new ValidationError(`invalid ${name}: ${text}`, issues);
  };
}

export const parseTaskDescription = parser<TaskDescription>('TaskDescription', taskDescription);
export const parsePilotDescription = parser<PilotDescription>('PilotDescription', pilotDescription);
export const parseTaskRecord = parser<TaskRecord>('TaskRecord', taskRecord);
export const parseTaskBulk = parser<TaskBulk>('TaskBulk', taskBulk);
export const parseNotification = parser<Notification>('Notification', notification);
export const parseNotificationBulk = parser<NotificationBulk>('NotificationBulk', notificationBulk);
export const parseStoreRequest = parser<StoreRequest>('StoreRequest', storeRequest);
export const parseStoreReply = parser<StoreReply>('StoreReply', storeReply);
export const parseControlMessage = parser<ControlMessage>('ControlMessage', controlMessage);
export const parseAgentConfig = parser<AgentConfig>('AgentConfig', agentConfig);
export const parseWorkload = parser<Workload>('Workload', workload);
export const parseSessionOptions = parser<SessionOptionsInput>('SessionOptions', sessionOptions);
