import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
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
import { handBackSchema } from '../generated/validators/hand-back';

// The project's Ajv, for schemas given at run time (an HTTP framework's routes): set up as
// scripts/gen-validators.js sets up the one that generates the validators of schemas/, with
// every schema of schemas/ registered, so that a route's `$ref`s reach them. Only a process
// that serves HTTP loads it (src/lib/validate.ts checks with the generated validators).
let ajv: Ajv | undefined;

function projectAjv(): Ajv {
  if (ajv !== undefined) return ajv;
  ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats(ajv);
  // an annotation for scripts/gen-types.js (json-schema-to-typescript): the TypeScript type of
  // a value the schema leaves open (a function's result is `unknown`, not an object)
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
    handBackSchema,
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
  return ajv;
}

/**
 * A validator of `schema` on the project's Ajv (strict, every error, no coercion, no removal):
 * what an HTTP framework checks its requests with (the service's routes), so a route's body is
 * held to the same rules and `$ref`s into schemas/ as everything else. Its errors, through
 * narrowIssues (src/lib/validate.ts), name the JSON path and what was allowed.
 */
export function compileSchema(schema: object): ValidateFunction {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id === 'string') {
    const known = projectAjv().getSchema(id);
    if (known !== undefined) return known;
  }
  return projectAjv().compile(schema);
}
