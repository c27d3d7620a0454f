import type { ErrorObject, ValidateFunction } from 'ajv';
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

/**
 * A task its agent hands back: a TaskRecord without its description, which the client holds
 * (the hot path does not carry it twice, and an agent cannot change what the client asked).
 */
export type HandBack = Omit<TaskRecord, 'description'>;

/**
 * The validator of schemas/<base>.schema.json, loaded when first used: Ajv's code for it,
 * generated at build time (scripts/gen-validators.js), so that no process loads Ajv or
 * compiles a schema to check a value (that took ~160 ms of every agent's start).
 */
function generated(base: string): () => ValidateFunction {
  return () => generatedModule<{ validate: ValidateFunction }>(base).validate;
}

function generatedModule<T>(base: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(`../generated/validators/${base}`) as T;
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
 * A parser that loads its schema's validator on first use: a process loads only what it
 * checks.
 */
function parser<T>(name: string, load: () => ValidateFunction): (input: unknown) => T {
  let validate: ValidateFunction | undefined;
  counts[name] = 0;
  return (input: unknown): T => {
    validate ??= load();
    counts[name]!++;
    if (validate(input)) return input as T;
    const errors = validate.errors ?? [];
    const issues = narrowOneOf(errors);
    const text = issuesText(issues);
    throw new ValidationError(`invalid ${name}: ${text}`, issues);
  };
}

export const parseTaskDescription = parser<TaskDescription>(
  'TaskDescription',
  generated('task-description'),
);
export const parsePilotDescription = parser<PilotDescription>(
  'PilotDescription',
  generated('pilot-description'),
);
export const parseTaskRecord = parser<TaskRecord>('TaskRecord', generated('task-record'));
export const parseHandBack = parser<HandBack>('HandBack', generated('hand-back'));
export const parseTaskBulk = parser<TaskBulk>('TaskBulk', generated('task-bulk'));
export const parseNotification = parser<Notification>('Notification', generated('notification'));
export const parseNotificationBulk = parser<NotificationBulk>(
  'NotificationBulk',
  generated('notification-bulk'),
);
export const parseStoreRequest = parser<StoreRequest>('StoreRequest', generated('store-request'));
export const parseStoreReply = parser<StoreReply>('StoreReply', generated('store-reply'));
export const parseControlMessage = parser<ControlMessage>(
  'ControlMessage',
  generated('control-message'),
);
export const parseControlRequest = parser<ControlRequest>(
  'ControlRequest',
  generated('control-request'),
);
const parseControlEnvelope = parser<ControlReply>('ControlReply', generated('control-reply'));
let controlResults: Readonly<Record<string, ValidateFunction>> | undefined;

/**
 * A reply read off a session's control socket, to a request of `op`: the envelope checked
 * against schemas/control-reply.schema.json, and its `result` against `definitions/<op>`.
 */
export function parseControlReply(op: ControlRequest['op'], input: unknown): ControlReply {
  const reply = parseControlEnvelope(input);
  if (!reply.ok) return reply;
  controlResults ??= generatedModule<{ results: typeof controlResults }>('control-reply').results!;
  const validate = controlResults[op];
  if (validate === undefined) throw new Error(`control-reply.schema.json has no definitions/${op}`);
  if (validate(reply.result)) return reply;
  const issues = narrowOneOf(validate.errors ?? []).map((i) => ({
    path: `/result${i.path === '/' ? '' : i.path}`,
    message: i.message,
  }));
  throw new ValidationError(`invalid ControlReply to '${op}': ${issuesText(issues)}`, issues);
}
export const parseAgentConfig = parser<AgentConfig>('AgentConfig', generated('agent-config'));
export const parseWorkload = parser<Workload>('Workload', generated('workload'));
export const parseSessionOptions = parser<SessionOptionsInput>(
  'SessionOptions',
  generated('session-options'),
);
export const parseFileRequest = parser<FileRequest>('FileRequest', generated('file-request'));
export const parseFileReply = parser<FileReply>('FileReply', generated('file-reply'));
export const parseSandboxRequest = parser<SandboxRequest>(
  'SandboxRequest',
  generated('sandbox-request'),
);
export const parseSandboxReply = parser<SandboxReply>('SandboxReply', generated('sandbox-reply'));
export const parseRouterConfig = parser<RouterConfig>('RouterConfig', generated('router-config'));
export const parseSubAgentMessage = parser<SubAgentMessage>(
  'SubAgentMessage',
  generated('subagent-message'),
);
/** A MongoDB session's `addresses` as read back from its `sessions` document. */
export const parsePublishedAddresses = parser<PublishedAddresses>(
  'PublishedAddresses',
  generated('published-addresses'),
);

/** Ajv's errors as issues, oneOfs narrowed to what helps a person (as every parser reports). */
export function narrowIssues(errors: readonly ErrorObject[]): ValidationIssue[] {
  return narrowOneOf(errors);
}
