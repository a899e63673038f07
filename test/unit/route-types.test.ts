// The handler's types follow the route's definition: `npm test` type-checks this file, so each
// `@ts-expect-error` below fails the build if the type it guards against ever type-checks.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { defineRoute, reply } from '../../src/platform/http/route.ts';

const Params = Type.Object({ job_id: Type.String() });
const Body = Type.Object({ count: Type.Integer() });

describe('route handler types', () => {
  it('gives key routes a principal, admin and open routes none, and typed params and body', () => {
    const key = defineRoute({
      method: 'POST',
      path: '/api/v1/things/:job_id',
      auth: { kind: 'key' },
      summary: 'a key route',
      params: Params,
      body: Body,
      responses: {},
      handle: async (ctx) => {
        const userId: string = ctx.principal.userId;
        const jobId: string = ctx.params.job_id;
        const count: number = ctx.body.count;
        // @ts-expect-error -- no such parameter
        void ctx.params.other;
        // @ts-expect-error -- the body's field is a number
        const wrong: string = ctx.body.count;
        return reply(200, { userId, jobId, count, wrong });
      },
    });
    const admin = defineRoute({
      method: 'GET',
      path: '/api/admin/v1/things',
      auth: { kind: 'admin' },
      summary: 'an admin route',
      responses: {},
      handle: async (ctx) => {
        const nobody: null = ctx.principal;
        // @ts-expect-error -- an admin route has no key principal
        void ctx.principal.userId;
        return reply(200, { nobody });
      },
    });
    assert.equal(key.auth.kind, 'key');
    assert.equal(admin.auth.kind, 'admin');
  });
});
