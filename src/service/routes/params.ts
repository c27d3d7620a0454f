/** The path parameters of a route on one task or pilot: its uid. */
export const UID_PARAMS = {
  type: 'object',
  additionalProperties: false,
  required: ['uid'],
  properties: { uid: { type: 'string', minLength: 1, maxLength: 1024 } },
} as const;
