import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { issuesText, ValidationError, type ValidationIssue } from '../errors';
import type {
  AgentConfig,
  ControlMessage,
  ControlReply,
  ControlRequest,
  FileReply,
  FileRequest,
  Notification,
  NotificationBulk,
  PilotDescription,
  PublishedAddresses,
  RouterConfig,
  SandboxReply,
  SandboxRequest,
  SessionOptionsInput,
  StoreReply,
  StoreRequest,
  SubAgentMessage,
  TaskBulk,
  TaskDescription,
  TaskRecord,
  Workload,
} from '../generated';
import agentConfig from '../../schemas/agent-config.schema.json';
import controlMessage from '../../schemas/control-message.schema.json';
import controlReply from '../../schemas/control-reply.schema.json';
import controlRequest from '../../schemas/control-request.schema.json';
import fileReply from '../../schemas/file-reply.schema.json';
import fileRequest from '../../schemas/file-request.schema.json';
import sandboxReply from '../../schemas/sandbox-reply.schema.json';
import sandboxRequest from '../../schemas/sandbox-request.schema.json';
import labels from '../../schemas/labels.schema.json';
import notification from '../../schemas/notification.schema.json';
import notificationBulk from '../../schemas/notification-bulk.schema.json';
import pilotDescription from '../../schemas/pilot-description.schema.json';
import pilotState from '../../schemas/pilot-state.schema.json';
import publishedAddresses from '../../schemas/published-addresses.schema.json';
import reason from '../../schemas/reason.schema.json';
import routerConfig from '../../schemas/router-config.schema.json';
import serviceReply from '../../schemas/service-reply.schema.json';
import sessionOptions from '../../schemas/session-options.schema.json';
import stagingDirective from '../../schemas/staging-directive.schema.json';
import subAgentMessage from '../../schemas/subagent-message.schema.json';
import storeReply from '../../schemas/store-reply.schema.json';
import storeRequest from '../../schemas/store-request.schema.json';
import taskBulk from '../../schemas/task-bulk.schema.json';
import taskDescription from '../../schemas/task-description.schema.json';
import taskRecord from '../../schemas/task-record.schema.json';
import taskState from '../../schemas/task-state.schema.json';
import waitReason from '../../schemas/wait-reason.schema.json';
import workload from '../../schemas/workload.schema.json';

/**
 * A task its agent hands back: a TaskRecord without its description, which the client holds
 * (the hot path does not carry it twice, and an agent cannot change what the client asked).
 */
const { description: _description, ...handBackProperties } = taskRecord.properties;
const handBack = {
  ...taskRecord,
  $id: 'https://pilotfish.dev/schemas/hand-back.schema.json',
  title: 'HandBack',
  description: 'A task record as its agent hands it back: without its description.',
  required: taskRecord.required.filter((r) => r !== 'description'),
  properties: handBackProperties,
};

/** A TaskRecord as an agent hands it back (see handBack). */
export type HandBack = Omit<TaskRecord, 'description'>;

// One Ajv per process; each schema is compiled once, when it is first used.
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);
// an annotation for scripts/gen-types.js (json-schema-to-typescript): the TypeScript type of a
// value the schema leaves open (a function's result is `unknown`, not an object)
ajv.addKeyword({ keyword: 'tsType', schemaType: 'string' });
ajv.addSchema([
  reason,
  taskState,
  pilotState,
  stagingDirective,
  labels,
  taskDescription,
  pilotDescription,
  taskRecord,
  handBack,
  taskBulk,
  notification,
  notificationBulk,
  storeRequest,
  storeReply,
  waitReason,
  controlMessage,
  controlRequest,
  controlReply,
  fileRequest,
  fileReply,
  sandboxRequest,
  sandboxReply,
  agentConfig,
  workload,
  sessionOptions,
  publishedAddresses,
  routerConfig,
  serviceReply,
  subAgentMessage,
]);

function compiled(schema: { $id: string }): ValidateFunction {
  const v = ajv.getSchema(schema.$id);
  if (v === undefined) throw new Error(`schema ${schema.$id} not registered`);
  return v;
}

/** Turns ajv's errors into issues that name the JSON path and what was allowed. */
export function describeErrors(
  errors: readonly ErrorObject[] | null | undefined,
): ValidationIssue[] {
  const list = errors ?? [];
  // ajv reports a bad property name twice: the failed rule (with propertyName) and a generic
  // 'propertyNames' error; keep the first, which says what the name had to match.
  const namedRules = new Set(
    list
      .filter((e) => e.propertyName !== undefined)
      .map((e) => `${e.instancePath}\u0000${e.propertyName}`),
  );
  const issues: ValidationIssue[] = [];
  for (const e of list) {
    const p = e.params as Record<string, unknown>;
    if (
      e.keyword === 'propertyNames' &&
      namedRules.has(`${e.instancePath}\u0000${String(p.propertyName)}`)
    ) {
      continue;
    }
    // an if/then/else adds "must match 'then' schema" to the errors that say what is wrong
    if (e.keyword === 'if') continue;
    let message = e.message ?? 'invalid';
    if (e.keyword === 'false schema') {
      // a property a conditional branch rules out (TaskDescription: what a mode does not take)
      message = "must not be given with this task's mode";
    } else if (e.keyword === 'additionalProperties') {
      message = `must not have property '${String(p.additionalProperty)}'`;
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (e.keyword === 'const') {
      message = `must be ${JSON.stringify(p.allowedValue)}`;
    }
    if (e.propertyName !== undefined) message = `property name '${e.propertyName}' ${message}`;
    issues.push({ path: e.instancePath || '/', message });
  }
  return dedupe(issues);
}

function dedupe(issues: readonly ValidationIssue[]): ValidationIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.path}\u0000${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The branch index of `e` under the oneOf at schema path `oneOfPath`, or undefined. */
function branchOf(e: ErrorObject, oneOfPath: string): string | undefined {
  const prefix = `${oneOfPath}/`;
  return e.schemaPath.startsWith(prefix)
    ? e.schemaPath.slice(prefix.length).split('/')[0]
    : undefined;
}

/**
 * oneOf reports the errors of every branch. Narrow them to what helps a person:
 * - branches whose discriminator (a `const` property such as `type`) did not match are dropped,
 *   so `{type: 'cancel_tasks', uids: [1]}` reports only `/uids/0 must be string`;
 * - when no branch's discriminator matched, one issue lists the allowed values
 *   (`/type must be one of "cancel_tasks", …`);
 * - when every branch misses the same required property, that one issue is kept.
 * Outer oneOfs are narrowed before inner ones, so errors of a dropped branch stay dropped.
 */
function narrowOneOf(errors: readonly ErrorObject[]): ValidationIssue[] {
  const dropped = new Set<ErrorObject>();
  const extra: ValidationIssue[] = [];
  const oneOfs = errors
    .filter((e) => e.keyword === 'oneOf')
    .sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const one of oneOfs) {
    if (dropped.has(one)) continue;
    const inBranch = errors.filter(
      (e) => !dropped.has(e) && branchOf(e, one.schemaPath) !== undefined,
    );
    if (inBranch.length === 0) continue; // failed because several branches matched: keep as is
    const branches = new Set(inBranch.map((e) => branchOf(e, one.schemaPath)!));
    // branch -> the discriminator it did not match
    const missed = new Map<string, { prop: string; allowed: unknown }>();
    for (const e of inBranch) {
      const b = branchOf(e, one.schemaPath)!;
      const rest = e.schemaPath.slice(one.schemaPath.length + b.length + 2);
      const m = /^properties\/([^/]+)\/const$/.exec(rest);
      if (m !== null && e.instancePath === `${one.instancePath}/${m[1]}`) {
        missed.set(b, {
          prop: m[1]!,
          allowed: (e.params as { allowedValue: unknown }).allowedValue,
        });
      }
    }
    const drop = (pred: (e: ErrorObject) => boolean): void => {
      dropped.add(one);
      for (const e of inBranch) if (pred(e)) dropped.add(e);
    };
    if (missed.size > 0 && missed.size < branches.size) {
      drop((e) => missed.has(branchOf(e, one.schemaPath)!));
    } else if (missed.size > 0) {
      drop(() => true);
      const byProp = new Map<string, unknown[]>();
      for (const { prop, allowed } of missed.values()) {
        byProp.set(prop, [...(byProp.get(prop) ?? []), allowed]);
      }
      for (const [prop, allowed] of byProp) {
        extra.push({
          path: `${one.instancePath}/${prop}`,
          message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`,
        });
      }
    } else {
      const missingIn = (b: string): Set<string> =>
        new Set(
          inBranch
            .filter((e) => e.keyword === 'required' && e.instancePath === one.instancePath)
            .filter((e) => branchOf(e, one.schemaPath) === b)
            .map((e) => String((e.params as { missingProperty: unknown }).missingProperty)),
        );
      const [first, ...others] = [...branches].map(missingIn);
      const common = [...(first ?? [])].filter((prop) => others.every((s) => s.has(prop)));
      if (common.length > 0) {
        drop(() => true);
        for (const prop of common) {
          extra.push({
            path: one.instancePath || '/',
            message: `must have required property '${prop}'`,
          });
        }
      }
    }
  }
  return dedupe([...describeErrors(errors.filter((e) => !dropped.has(e))), ...extra]);
}

/** How many times this process checked a value against each schema (by title). */
const counts: Record<string, number> = {};

/**
 * Validations so far in this process, per schema: what a process checks, and how often
 * (each description should be checked once at the API and once per process it enters).
 * The agent logs them as it exits.
 */
export function validationCounts(): Readonly<Record<string, number>> {
  return { ...counts };
}

/**
 * A parser that compiles its schema on first use: a process compiles only what it checks
 * (compiling all of them took ~180 ms of every agent's start).
 */
function parser<T>(name: string, schema: { $id: string }): (input: unknown) => T {
  let validate: ValidateFunction | undefined;
  counts[name] = 0;
  return (input: unknown): T => {
    validate ??= compiled(schema);
    counts[name]!++;
    if (validate(input)) return input as T;
    const errors = validate.errors ?? [];
    const issues = narrowOneOf(errors);
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${name}: ${text}`, issues);
  };
}

export const parseTaskDescription = parser<TaskDescription>('TaskDescription', taskDescription);
export const parsePilotDescription = parser<PilotDescription>('PilotDescription', pilotDescription);
export const parseTaskRecord = parser<TaskRecord>('TaskRecord', taskRecord);
export const parseHandBack = parser<HandBack>('HandBack', handBack);
export const parseTaskBulk = parser<TaskBulk>('TaskBulk', taskBulk);
export const parseNotification = parser<Notification>('Notification', notification);
export const parseNotificationBulk = parser<NotificationBulk>('NotificationBulk', notificationBulk);
export const parseStoreRequest = parser<StoreRequest>('StoreRequest', storeRequest);
export const parseStoreReply = parser<StoreReply>('StoreReply', storeReply);
export const parseControlMessage = parser<ControlMessage>('ControlMessage', controlMessage);
export const parseControlRequest = parser<ControlRequest>('ControlRequest', controlRequest);
const parseControlEnvelope = parser<ControlReply>('ControlReply', controlReply);
const controlResults = new Map<string, ValidateFunction>();

/**
 * A reply read off a session's control socket, to a request of `op`: the envelope checked
 * against schemas/control-reply.schema.json, and its `result` against `definitions/<op>`.
 */
export function parseControlReply(op: ControlRequest['op'], input: unknown): ControlReply {
  const reply = parseControlEnvelope(input);
  if (!reply.ok) return reply;
  let validate = controlResults.get(op);
  if (validate === undefined) {
    validate = ajv.getSchema(`${controlReply.$id}#/definitions/${op}`);
    if (validate === undefined) {
      throw new Error(`control-reply.schema.json has no definitions/${op}`);
    }
    controlResults.set(op, validate);
  }
  if (validate(reply.result)) return reply;
  const issues = narrowOneOf(validate.errors ?? []).map((i) => ({
    path: `/result${i.path === '/' ? '' : i.path}`,
    message: i.message,
  }));
  throw new ValidationError(`invalid ControlReply to '${op}': ${issuesText(issues)}`, issues);
}
export const parseAgentConfig = parser<AgentConfig>('AgentConfig', agentConfig);
export const parseWorkload = parser<Workload>('Workload', workload);
export const parseSessionOptions = parser<SessionOptionsInput>('SessionOptions', sessionOptions);
export const parseFileRequest = parser<FileRequest>('FileRequest', fileRequest);
export const parseFileReply = parser<FileReply>('FileReply', fileReply);
export const parseSandboxRequest = parser<SandboxRequest>('SandboxRequest', sandboxRequest);
export const parseSandboxReply = parser<SandboxReply>('SandboxReply', sandboxReply);
export const parseRouterConfig = parser<RouterConfig>('RouterConfig', routerConfig);
export const parseSubAgentMessage = parser<SubAgentMessage>('SubAgentMessage', subAgentMessage);
/** A MongoDB session's `addresses` as read back from its `sessions` document. */
export const parsePublishedAddresses = parser<PublishedAddresses>(
  'PublishedAddresses',
  publishedAddresses,
);

/**
 * A validator of `schema` on the project's Ajv (strict, every error, no coercion, no removal):
 * what an HTTP framework checks its requests with (the service's routes), so a route's body is
 * held to the same rules and `$ref`s into schemas/ as everything else. Its errors, through
 * narrowIssues, name the JSON path and what was allowed.
 */
export function compileSchema(schema: object): ValidateFunction {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id === 'string') {
    const known = ajv.getSchema(id);
    if (known !== undefined) return known;
  }
  return ajv.compile(schema);
}

/** Ajv's errors as issues, oneOfs narrowed to what helps a person (as every parser reports). */
export function narrowIssues(errors: readonly ErrorObject[]): ValidationIssue[] {
  return narrowOneOf(errors);
}
