import labels from '../../schemas/labels.schema.json';
import pilotDescription from '../../schemas/pilot-description.schema.json';
import stagingDirective from '../../schemas/staging-directive.schema.json';
import taskDescription from '../../schemas/task-description.schema.json';

/**
 * The schemas the service's routes `$ref` beyond the control handlers' (CONTROL_SCHEMAS): what
 * Fastify registers (addSchema) so the OpenAPI document holds them; the project's Ajv has them
 * all already, by the same `$id`s.
 */
export const SERVICE_SCHEMAS: readonly { readonly $id: string }[] = [
  taskDescription,
  stagingDirective,
  labels,
  pilotDescription,
];
