import type { FastifyInstance } from 'fastify';
import pilotDescription from '../../../schemas/pilot-description.schema.json';
import type { PilotDescription } from '../../generated';
import { sendError } from '../errors';
import type { ServiceContext } from '../context';
import { UID_PARAMS } from './params';
import { pilotView } from '../views';

/** Pilots: submit (admin), list, get, cancel (admin). New pilots take the service's tasks. */
export function pilotRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/v1/pilots',
    { schema: { summary: 'List pilots', tags: ['pilots'] }, config: { auth: { scope: 'read' } } },
    (_req, reply) => reply.send({ pilots: ctx.pmgr.list().map(pilotView) }),
  );

  app.get<{ Params: { uid: string } }>(
    '/v1/pilots/:uid',
    {
      schema: { summary: 'One pilot', tags: ['pilots'], params: UID_PARAMS },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const p = ctx.pmgr.get(req.params.uid);
      return p === undefined
        ? sendError(reply, 404, 'E_NOT_FOUND', `no pilot '${req.params.uid}'`)
        : pilotView(p);
    },
  );

  app.post<{ Body: { pilots: PilotDescription[] } }>(
    '/v1/pilots',
    {
      schema: {
        summary: "Submit pilots: they take the service's tasks",
        tags: ['pilots'],
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['pilots'],
          properties: {
            pilots: {
              type: 'array',
              minItems: 1,
              maxItems: 64,
              items: { $ref: pilotDescription.$id },
            },
          },
        },
      },
      config: { auth: { scope: 'admin' } },
    },
    async (req, reply) => {
      const pilots = await ctx.pmgr.submitPilots(req.body.pilots);
      ctx.tmgr.addPilots(pilots);
      return reply.code(201).send({ pilots: pilots.map(pilotView) });
    },
  );

  app.post<{ Params: { uid: string } }>(
    '/v1/pilots/:uid/cancel',
    {
      schema: {
        summary: 'Cancel a pilot (its tasks go to the others)',
        tags: ['pilots'],
        params: UID_PARAMS,
      },
      config: { auth: { scope: 'admin' } },
    },
    async (req, reply) => {
      const p = ctx.pmgr.get(req.params.uid);
      if (p === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no pilot '${req.params.uid}'`);
      }
      ctx.pmgr.cancelPilots([p.uid]);
      return pilotView(p);
    },
  );
}
