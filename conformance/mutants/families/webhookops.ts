/**
 * Webhook subscriptions that break the reference profile's own choices where spec §5.5 and §6 are silent: a
 * subscription URL with credentials taken (they would be sent to whoever the host is), a receiver's 3xx logged as
 * a delivery, and a secret rotation that drops the old secret at once instead of signing with both through the
 * overlap, a CloudEvent without its subject, a PagerDuty incident without the severity its destination sets, a destination's delivered message logged pending, Slack approval buttons that do not name the step or are styled as Block Kit does not take, a message without its pending action; and, against spec §1's "Body format | `application/json`", deliveries sent as text/plain.
 */
import { type Json, type Mutant, type ProxiedRequest, parseJson, pathOnly } from '../proxy.js'
import { dropFromDelivery, editListEntries } from '../rewrites.js'

const DELIVERY_LOG = /^\/v1\/webhooks\/[^/]+\/deliveries$/
const DESTINATION_LOG = /^\/v1\/destinations\/[^/]+\/deliveries$/

/** Keeps the first `v1` of a delivery's `signature` field and the first entry of its `webhook-signature` header. */
function firstSecretOnly(req: ProxiedRequest): ProxiedRequest {
  const body = parseJson(req.body)
  if (!body || typeof body.signature !== 'string') return req
  const [t, v1] = body.signature.split(',')
  const header = req.headers['webhook-signature']
  return {
    ...req,
    headers: header ? { ...req.headers, 'webhook-signature': header.split(' ')[0] ?? header } : req.headers,
    body: JSON.stringify({ ...body, signature: [t, v1].join(',') }),
  }
}

/** The entries of a delivery log that `when` picks, shown delivered: never retried, no error, delivered at creation. */
function loggedDelivered(log: RegExp, when: (entry: Json) => boolean) {
  return editListEntries(log, (d) =>
    when(d)
      ? { ...d, status: 'delivered', next_attempt_at: null, last_error: null, delivered_at: d.created_at }
      : d,
  )
}

/** An attempt nobody answered: no status code, and the error saying why. */
const unanswered = (d: Json) => d.last_status_code === null && typeof d.last_error === 'string'

/** A Slack message with each button of its actions blocks changed by `edit`. */
function editButtons(req: ProxiedRequest, edit: (button: Json) => Json): ProxiedRequest {
  const body = parseJson(req.body)
  if (!body || !Array.isArray(body.blocks)) return req
  const blocks = body.blocks.map((b: Json) =>
    b.type === 'actions' && Array.isArray(b.elements) ? { ...b, elements: b.elements.map(edit) } : b,
  )
  return { ...req, body: JSON.stringify({ ...body, blocks }) }
}

export function webhookOperationMutants(): Mutant[] {
  return [
    {
      // The stand-in sees HTTP only: the reference's NATS publishes go straight to the nats-server, so these
      // break the destination through its creation and its delivery log, as a deployment could.
      id: 'nats-subject-prefix-ignored',
      description:
        'A nats destination ignores its subject_prefix and publishes under the default agentops.<workspace>.<kind>: consumers subscribed to the configured subjects get nothing',
      targets: ['destinations.event-bus'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/destinations') return req
        const body = parseJson(req.body)
        const config = body?.config
        if (body?.type !== 'nats' || typeof config !== 'object' || config === null || Array.isArray(config))
          return req
        const { subject_prefix: _ignored, ...rest } = config as Json
        return { ...req, body: JSON.stringify({ ...body, config: rest }) }
      },
    },
    {
      id: 'retry-after-ignored',
      description:
        "A destination's delivery answered 429 or 503 with Retry-After is retried a second later, at the outbox's backoff: the service that asked for time is hammered",
      targets: ['destinations.slack-retry-after'],
      response(req, res) {
        const soon = new Date(Date.now() + 1000).toISOString()
        return editListEntries(DESTINATION_LOG, (d) =>
          (d.last_status_code === 429 || d.last_status_code === 503) && d.status === 'pending'
            ? { ...d, next_attempt_at: soon }
            : d,
        )(req, res)
      },
    },
    {
      id: 'slack-sender-settings-ignored',
      description:
        "A slack destination's username and icon_emoji are left out of its messages: they arrive under the app's default name",
      targets: ['destinations.slack-incoming-webhook'],
      delivery: dropFromDelivery(() => true, 'username', 'icon_emoji'),
    },
    {
      id: 'nats-no-responders-logged-500',
      description:
        'A nats delivery nothing listened to is logged with status 500 and no reason, not NATS\'s 503 "no responders": the operator cannot tell a missing stream from a broken server',
      targets: ['destinations.event-bus'],
      response: editListEntries(DESTINATION_LOG, (d) =>
        d.last_status_code === 503 ? { ...d, last_status_code: 500, last_error: 'failed' } : d,
      ),
    },
    {
      id: 'nats-refusal-given-up-at-once',
      description:
        'A nats publish JetStream refuses is logged failed after its first attempt, never retried: a stream created a moment later never gets the event',
      targets: ['destinations.event-bus'],
      response: editListEntries(DESTINATION_LOG, (d) =>
        /expected stream does not match/.test(String(d.last_error ?? ''))
          ? { ...d, status: 'failed', attempts: 1, next_attempt_at: null }
          : d,
      ),
    },
    {
      id: 'webhook-url-credentials-taken',
      description:
        'POST /v1/webhooks takes a url with a user and password in it (answered 201 without reaching the deployment, so nothing is ever sent to that host)',
      targets: ['webhooks.subscription-refusals'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return req
        const body = parseJson(req.body)
        if (typeof body?.url !== 'string' || !/^https?:\/\/[^/]*@/.test(body.url)) return req
        return {
          status: 201,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            webhook_id: 'whk_conf_credentials',
            url: body.url,
            events: body.events,
            status: 'active',
            created_at: new Date().toISOString(),
            secret_rotated_at: null,
          }),
        }
      },
    },
    {
      id: 'webhook-listed-name-not-resolved',
      description:
        'A subscription whose url names a listed host (localhost) is taken but never delivered to: the name is not resolved at the attempt',
      targets: ['webhooks.listed-name-resolved'],
      request(req) {
        if (req.method !== 'POST' || pathOnly(req.path) !== '/v1/webhooks') return req
        const body = parseJson(req.body)
        if (typeof body?.url !== 'string' || !/^https?:\/\/localhost[:/]/.test(body.url)) return req
        return {
          status: 201,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            webhook_id: 'whk_conf_by_name',
            url: body.url,
            events: body.events,
            status: 'active',
            created_at: new Date().toISOString(),
            secret_rotated_at: null,
          }),
        }
      },
    },
    {
      id: 'webhook-3xx-counted-delivered',
      description:
        'A delivery the receiver answered 300 is logged delivered: a redirect counts as success and is never retried',
      targets: ['webhooks.receiver-answer-judged'],
      response: loggedDelivered(
        DELIVERY_LOG,
        (d) =>
          typeof d.last_status_code === 'number' && d.last_status_code >= 300 && d.last_status_code < 400,
      ),
    },
    {
      id: 'webhook-unanswered-attempt-counted-delivered',
      description:
        'A delivery whose receiver dropped the connection without answering is logged delivered: an attempt that raised no error on sending counts as success and is never retried',
      targets: ['webhooks.receiver-answer-judged'],
      response: loggedDelivered(DELIVERY_LOG, unanswered),
    },
    {
      id: 'destination-unanswered-attempt-counted-delivered',
      description:
        'A destination delivery whose service dropped the connection without answering is logged delivered, never retried',
      targets: ['destinations.slack-retry-after'],
      response: loggedDelivered(DESTINATION_LOG, unanswered),
    },
    {
      id: 'destination-retry-after-heeded-on-500',
      description:
        "A destination's 500 with Retry-After is waited out like a 429: the delivery is logged attempted once and pending until the Retry-After has passed, not retried at the outbox's backoff",
      targets: ['destinations.slack-retry-after'],
      response: editListEntries(DESTINATION_LOG, (d) =>
        d.last_status_code === 500
          ? {
              ...d,
              status: 'pending',
              attempts: 1,
              next_attempt_at: new Date(Date.now() + 120_000).toISOString(),
            }
          : d,
      ),
    },
    {
      id: 'webhook-never-gives-up',
      description:
        'A delivery its receiver failed as many times as the deployment allows is logged pending with a next attempt: it is never given up, and its log never says so',
      targets: ['webhooks.gives-up-after-max-attempts'],
      response: editListEntries(DELIVERY_LOG, (d) =>
        d.status === 'failed'
          ? { ...d, status: 'pending', next_attempt_at: new Date(Date.now() + 60_000).toISOString() }
          : d,
      ),
    },
    {
      id: 'webhook-one-attempt-more',
      description:
        'A delivery its receiver fails every time is logged given up after one attempt more than the deployment declares',
      targets: ['webhooks.gives-up-after-max-attempts'],
      response: editListEntries(DELIVERY_LOG, (d) =>
        d.status === 'failed' && typeof d.attempts === 'number' ? { ...d, attempts: d.attempts + 1 } : d,
      ),
    },
    {
      id: 'delivery-sent-as-text-plain',
      description: 'Webhook deliveries carry Content-Type text/plain although their body is JSON',
      targets: ['webhooks.delivery-arrives'],
      run: ['webhooks.subscribe', 'webhooks.delivery-arrives'],
      delivery: (req) => ({
        ...req,
        headers: { ...req.headers, 'content-type': 'text/plain; charset=utf-8' },
      }),
    },
    {
      id: 'cloudevent-without-subject',
      description:
        'A binary-mode CloudEvent leaves out its subject (ce-subject), the run or agent it is about',
      targets: ['destinations.cloudevents-binary'],
      delivery(req) {
        if (req.headers['ce-subject'] === undefined) return req
        const { 'ce-subject': _dropped, ...headers } = req.headers
        return { ...req, headers }
      },
    },
    {
      id: 'pagerduty-severity-setting-ignored',
      description:
        'A pagerduty destination configured with severity critical triggers its incidents at the default warning',
      targets: ['destinations.pagerduty-events-v2'],
      delivery(req) {
        const body = parseJson(req.body)
        const payload = body?.payload
        if (body?.event_action !== 'trigger' || typeof payload !== 'object' || payload === null) return req
        return { ...req, body: JSON.stringify({ ...body, payload: { ...payload, severity: 'warning' } }) }
      },
    },
    {
      id: 'destination-success-logged-pending',
      description:
        'A destination delivery its service answered 200 is logged pending, to be sent again: success is not recognised',
      targets: ['destinations.slack-incoming-webhook', 'destinations.pagerduty-events-v2'],
      response: editListEntries(DESTINATION_LOG, (d) =>
        d.status === 'delivered' ? { ...d, status: 'pending', delivered_at: null } : d,
      ),
    },
    {
      id: 'slack-buttons-name-run-only',
      description:
        'The Approve and Deny buttons of a Slack approval message carry the run id only, not the step to decide',
      targets: ['destinations.slack-approve-from-chat'],
      delivery: (req) =>
        editButtons(req, (e) => {
          const value = parseJson(String(e.value ?? ''))
          return value ? { ...e, value: JSON.stringify({ run_id: value.run_id }) } : e
        }),
    },
    {
      id: 'slack-approve-button-styled-green',
      description:
        'The Approve button of a Slack approval message has style green, which Block Kit does not take (primary or danger): Slack refuses the whole message',
      targets: ['destinations.slack-approve-from-chat'],
      delivery: (req) => editButtons(req, (e) => (e.style === 'primary' ? { ...e, style: 'green' } : e)),
    },
    {
      id: 'slack-stale-click-replaces-message',
      description:
        'A click on an approval already decided is answered by replacing the shared message, not by an ephemeral note to the clicker',
      targets: ['destinations.slack-approve-from-chat'],
      delivery(req) {
        const body = parseJson(req.body)
        if (body?.response_type !== 'ephemeral') return req
        const { response_type: _ephemeral, ...rest } = body
        return { ...req, body: JSON.stringify({ ...rest, replace_original: true }) }
      },
    },
    {
      id: 'slack-deny-shown-as-approved',
      description: 'The message a Deny click leaves says the step was approved',
      targets: ['destinations.slack-approve-from-chat'],
      delivery(req) {
        const body = parseJson(req.body)
        if (body?.replace_original !== true || !/denied/i.test(req.body)) return req
        return { ...req, body: req.body.replace(/Denied/g, 'Approved').replace(/denied/g, 'approved') }
      },
    },
    {
      id: 'slack-approval-without-pending-action',
      description:
        'A Slack approval message leaves out the pending action (the tool and its input) it documents',
      targets: ['destinations.slack-approve-from-chat'],
      delivery(req) {
        const body = parseJson(req.body)
        if (!body || !Array.isArray(body.blocks)) return req
        const blocks = body.blocks.filter(
          (b: Json) => !/pending action/i.test(String((b.text as Json | undefined)?.text ?? '')),
        )
        return { ...req, body: JSON.stringify({ ...body, blocks }) }
      },
    },
    {
      id: 'rotation-drops-old-secret',
      description:
        'A rotated secret replaces the old one at once: deliveries during the overlap are signed with the new secret only',
      targets: ['webhooks.secret-rotation'],
      delivery: firstSecretOnly,
    },
  ]
}
