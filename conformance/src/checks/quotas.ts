/**
 * The reference's workspace quotas on what a workspace keeps (tools, webhook subscriptions, destinations): no spec
 * sentence names them, so every check here is profile. The quota-limited identity's workspace holds one of each.
 */
import type { Check, CheckContext } from '../check.js'
import { settingName } from '../config.js'
import { expectStatus, nextPageCursor, ownId, pageItems, unservedPart } from '../fixtures.js'
import { type HttpClient, type HttpResponse, obj } from '../http.js'
import { assert } from '../types.js'
import { short } from '../wait.js'
import { servesDestinations } from './destinations/index.js'
import { receiverUrl, webhookSecret } from './webhooks.js'

/** One kind of thing a workspace keeps under a quota, and how the check makes, lists and removes one. */
interface Kept {
  quota: 'tools' | 'webhooks' | 'destinations'
  path: string
  /** The id field of its answers (`tool_id`), as ownId reads it. */
  kind: 'tool' | 'webhook' | 'destination'
  /** Whether its body points at the suite's receiver (no receiver declared: that part does not run). */
  calls: boolean
  body(ctx: CheckContext, label: string): Record<string, unknown>
}

const KEPT: Kept[] = [
  {
    quota: 'tools',
    path: '/v1/tools',
    calls: false,
    kind: 'tool',
    body: (ctx, label) => ({
      name: ctx.name(label),
      provider: ctx.config.profile.tools.succeed.provider,
      policy_binding: { envelope: 'default', required_scopes: [] },
    }),
  },
  {
    quota: 'webhooks',
    path: '/v1/webhooks',
    calls: true,
    kind: 'webhook',
    body: (ctx, label) => ({
      url: `${receiverUrl(ctx)}/${ctx.name(label)}`,
      events: ['run.failed'],
      secret: webhookSecret(),
    }),
  },
  {
    quota: 'destinations',
    path: '/v1/destinations',
    calls: true,
    kind: 'destination',
    body: (ctx, label) => ({
      type: 'cloudevents',
      name: ctx.name(label),
      events: ['run.failed'],
      config: { url: `${receiverUrl(ctx)}/${ctx.name(label)}`, mode: 'binary' },
    }),
  },
]

/**
 * The ids a workspace holds of one kind (a bounded walk of its default list, which leaves retired tools out: they hold
 * no room): what an earlier run with this identity may have left. Undefined when the deployment serves no such list
 * (GET /v1/webhooks and /v1/destinations are the reference's extensions); that part is then partial unless the
 * deployment declares the list absent.
 */
async function held(ctx: CheckContext, http: HttpClient, k: Kept): Promise<string[] | undefined> {
  const ids: string[] = []
  let cursor: string | null | undefined
  for (let i = 0; i < 10; i++) {
    const res = await http.get(`${k.path}?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    const part = `the ${k.quota} part's removal of what an earlier run left and its count of what a refusal left`
    if (i === 0 && unservedPart(ctx, res, `GET ${k.path}`, part)) return undefined
    expectStatus(res, 200, `listing the quota-limited workspace's ${k.quota}`)
    for (const item of pageItems(res.body) ?? []) {
      const id = ownId(item, k.kind)
      if (id) ids.push(id)
    }
    cursor = nextPageCursor(ctx, res, 200, `GET ${k.path}?limit=200`)
    if (!cursor) break
  }
  return ids
}

/**
 * The checks of the quota-limited identity's workspace (its own, with small quotas and key bounds): one after another,
 * since each fills a quota the next expects empty, alongside the rest of the run, which never touches that workspace.
 */
export const QUOTA_LANE = 'the quota-limited workspace'

export const quotaChecks: Check[] = [
  {
    id: 'quotas.room-returns',
    lane: QUOTA_LANE,
    title:
      'A workspace holding its quota of tools, webhook subscriptions or destinations is refused the next one 403 quota_exceeded naming the quota, with nothing created; retiring the tool or deleting the subscription or destination gives the room back',
    level: 'profile',
    clauses: ['S4.7', 'S4.8', 'S4.11', 'S6.5'],
    // The quota-limited workspace's other quotas are judged by idempotency.quota-refusals and the key quotas.
    async run(ctx) {
      const http = ctx.as('quotaLimited')
      const problems: string[] = []
      for (const k of KEPT) {
        if (k.calls && !(ctx.receiver && ctx.config.receiver.url)) {
          ctx.partial(
            `the ${k.quota} part did not run: no webhook receiver (${settingName('receiver-url')}) for the ${k.kind}s it creates to call`,
          )
          continue
        }
        if (k.quota === 'destinations' && !(await servesDestinations(ctx))) {
          ctx.partial('the destinations part did not run: the deployment has no /v1/destinations')
          continue
        }
        const create = async (label: string): Promise<{ res: HttpResponse; id: string | undefined }> => {
          const res = await http.post(k.path, k.body(ctx, label))
          const id = res.status < 300 ? ownId(res.body, k.kind) : undefined
          if (id)
            ctx.cleanup(`remove ${k.kind} ${id}`, (cleanup) =>
              cleanup.withToken(http.token).delete(`${k.path}/${id}`),
            )
          return { res, id }
        }
        const remove = async (id: string, what: string) =>
          expectStatus(await http.delete(`${k.path}/${id}`), [200, 202, 204], what)
        // Room first: whatever an earlier run with this identity left is removed.
        for (const id of (await held(ctx, http, k)) ?? []) await remove(id, `removing a leftover ${k.kind}`)
        const first = await create(`quota-${k.kind}-a`)
        expectStatus(first.res, [200, 201], `creating the workspace's one ${k.kind}`)
        const before = (await held(ctx, http, k))?.length
        const over = await create(`quota-${k.kind}-b`)
        if (over.res.status < 300) {
          problems.push(
            `${k.quota}: a second ${k.kind} was created (${over.res.status}) where the workspace's quota holds one`,
          )
          continue
        }
        const error = obj(obj(over.res.body).error)
        const detail = obj(error.detail)
        if (over.res.status !== 403 || error.code !== 'quota_exceeded' || detail.quota !== k.quota)
          problems.push(
            `${k.quota}: the ${k.kind} over the quota was refused ${over.res.status} ${short(over.res.body)}, not 403 quota_exceeded {quota: "${k.quota}"}`,
          )
        const after = (await held(ctx, http, k))?.length
        if (after !== undefined && before !== undefined && after !== before)
          problems.push(`${k.quota}: the refused ${k.kind} left ${after - before} behind`)
        if (!first.id) continue
        await remove(first.id, `removing the workspace's one ${k.kind}`)
        const again = await create(`quota-${k.kind}-c`)
        if (again.res.status >= 300)
          problems.push(
            `${k.quota}: with its one ${k.kind} removed, a new one was refused ${again.res.status} ${short(again.res.body)}: the room did not come back`,
          )
        else if (again.id) await remove(again.id, `removing the ${k.kind} made after the room came back`)
      }
      assert(problems.length === 0, problems.join('; '))
    },
  },
]
