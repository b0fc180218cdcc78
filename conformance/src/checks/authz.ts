/** Spec §1, §7: the policy gate refuses with 403 policy_denied and names its reasons in `detail`. */
import type { Check } from '../check.js'
import { ownId } from '../fixtures.js'
import { obj } from '../http.js'
import { assert, fail } from '../types.js'
import { short } from '../wait.js'
import { expectError } from './assertions.js'

export const authzChecks: Check[] = [
  {
    id: 'authz.policy-denied-403',
    title:
      'A token without the needed scope is refused 403 policy_denied with envelope, violation, observed, limit, escalation_queue',
    level: 'core',
    clauses: ['S1.3', 'S7.2', 'S7.5'],
    async run(ctx) {
      const narrow = ctx.as('narrowScope')
      const { method, path, body } = ctx.config.profile.narrowDenied
      const res = await narrow.request(method, path, body === undefined ? {} : { body })
      if (res.status < 300) {
        const id = ownId(res.body, 'agent')
        if (typeof id === 'string')
          ctx.cleanup(`delete agent ${id}`, () => ctx.http.delete(`/v1/agents/${id}`))
        fail(`the narrow-scope token was allowed ${method} ${path}`)
      }
      const error = expectError(res, 403, `${method} ${path} with the narrow token`, 'policy_denied')
      const detail = obj(error.detail)
      for (const f of ['envelope', 'violation', 'observed', 'limit', 'escalation_queue']) {
        assert(f in detail, `detail.${f} is missing: ${short(detail)}`)
      }
    },
  },
  {
    id: 'authz.scope-detail-values',
    title:
      'A missing scope names envelope api_key, violation missing_scope, the key’s scopes and the required scope',
    level: 'profile',
    clauses: ['S7.2'],
    async run(ctx) {
      const narrow = ctx.as('narrowScope')
      const { method, path, body } = ctx.config.profile.narrowDenied
      const res = await narrow.request(method, path, body === undefined ? {} : { body })
      const detail = obj(expectError(res, 403, 'narrow token', 'policy_denied').detail)
      assert(detail.envelope === 'api_key' && detail.violation === 'missing_scope', `detail ${short(detail)}`)
      assert(
        Array.isArray(detail.observed) && Array.isArray(detail.limit),
        `observed/limit are not scope lists: ${short(detail)}`,
      )
      assert(typeof detail.escalation_queue === 'string', 'escalation_queue is not named')
    },
  },
  {
    id: 'authz.narrow-scope-still-reads',
    title: 'The narrow token is an authenticated identity: what its scopes allow answers 200',
    level: 'profile',
    clauses: ['S5.1'],
    async run(ctx) {
      const res = await ctx.as('narrowScope').get('/v1/agents?limit=1')
      assert(res.status === 200, `GET /v1/agents with agents:read answered ${res.status}`)
    },
  },
]
