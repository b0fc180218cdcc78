/**
 * Extension operations that stop answering as their contract documents: the OpenAPI document is no longer served,
 * a redelivery of a logged delivery is refused as if the delivery did not exist, a destination's change is refused
 * as if the destination did not exist, a binary CloudEvent's ce-id that is not its event id, and a destination's
 * write-only secret comes back when it is read; a Slack
 * message or a PagerDuty event that its service would refuse (no text nor blocks, a text object of an undocumented
 * type, a severity outside the enum, no routing key) or that could never close its incident (a dedup_key per request,
 * a resolve sent as acknowledge, an incident keyed by agent so that two runs share it); a Slack notification text that
 * names nothing; a Slack interaction refused without the error envelope; a test send of a run's end without the
 * outcome every real one carries;
 * a Slack message that shows a run's input unescaped (its markup pings, mentions and links); a destination change
 * answered but not kept.
 */
import { randomBytes } from 'node:crypto'
import {
  editJson,
  errorAnswer,
  type Json,
  type Mutant,
  type ProxiedRequest,
  type ProxiedResponse,
  parseJson,
  pathOnly,
} from '../proxy.js'

const notFound: ProxiedResponse = errorAnswer(404, 'not_found', 'Not found')

const DESTINATION = /^\/v1\/destinations\/[^/]+$/

/** The per-agent dedup_key the incident-per-agent mutant gives each run's own (a resolve carries no agent). */
const incidentKeys = new Map<string, string>()

/** The Slack interactions the replay mutant has let through, by signature and body. */
const seenSlackClicks = new Set<string>()

/** Rewrites the JSON body of the deliveries `is` picks (a destination type's bodies), on their way to the receiver. */
function rewriteDelivery(is: (body: Json) => boolean, edit: (body: Json) => Json) {
  return (req: ProxiedRequest): ProxiedRequest => {
    const body = parseJson(req.body)
    return body && is(body) ? { ...req, body: JSON.stringify(edit(body)) } : req
  }
}
const slackMessage = (b: Json) => Array.isArray(b.blocks)

/** Rewrites each Block Kit block of the Slack messages on their way to the receiver. */
function rewriteSlackBlocks(edit: (block: Json, index: number, blocks: Json[]) => Json) {
  return rewriteDelivery(slackMessage, (b) => ({ ...b, blocks: (b.blocks as Json[]).map(edit) }))
}

/** A Block Kit block with its section fields (Slack's labelled facts) edited; a block without fields as it is. */
const withFields =
  (edit: (fields: Json[]) => Json[]) =>
  (block: Json): Json =>
    Array.isArray(block.fields) ? { ...block, fields: edit(block.fields as Json[]) } : block

/** A Block Kit block without its fields labelled `label` (`*label*` opening the field's text). */
const withoutField = (label: string) =>
  withFields((fields) =>
    fields.filter((f) => !(typeof f.text === 'string' && f.text.startsWith(`*${label}*`))),
  )

/** Every string in a Slack message with Slack's three entities undone, as a sender that never escaped sends it. */
function unescapeSlack(b: Json): Json {
  const walk = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
      : Array.isArray(v)
        ? v.map(walk)
        : typeof v === 'object' && v !== null
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
          : v
  return walk(b) as Json
}
const pagerDutyEvent = (b: Json) => typeof b.event_action === 'string'
const structuredCloudEvent = (b: Json) => b.specversion === '1.0' && typeof b.data === 'object'

export function extensionMutants(): Mutant[] {
  /** The secrets destinations were created with, as the deployment was sent them. */
  const secrets: unknown[] = []
  const slackSecrets: unknown[] = []
  return [
    {
      id: 'openapi-document-not-served',
      description: 'GET /openapi.json answers 404: the served contract is gone',
      targets: ['surface.extension-operations'],
      request: (req) => (req.method === 'GET' && pathOnly(req.path) === '/openapi.json' ? notFound : req),
    },
    {
      id: 'redeliver-unknown-delivery',
      description:
        'Redelivering a delivery from the log answers 404, as if the log named deliveries that do not exist',
      targets: ['surface.extension-operations'],
      request: (req) =>
        req.method === 'POST' &&
        /^\/v1\/webhooks\/[^/]+\/deliveries\/[^/]+\/redeliver$/.test(pathOnly(req.path))
          ? notFound
          : req,
    },
    {
      id: 'destination-change-refused',
      description:
        'PATCH /v1/destinations/{id} answers 404, as if the destination it just listed did not exist',
      targets: ['destinations.operations'],
      request: (req) => (req.method === 'PATCH' && DESTINATION.test(pathOnly(req.path)) ? notFound : req),
    },
    {
      id: 'destination-defaults-every-kind',
      description:
        'A slack destination created without events gets every kind, not the documented run.failed, policy.denied and run.awaiting_approval: the channel fills with every run step',
      targets: ['destinations.settings-judged'],
      response(req, res) {
        const body = req.method === 'POST' && pathOnly(req.path) === '/v1/destinations' && parseJson(req.body)
        return body && body.type === 'slack' && body.events === undefined && res.status === 201
          ? editJson(res, (b) => ({ ...b, events: [...(b.events as string[]), 'run.started'] }))
          : res
      },
    },
    {
      id: 'destination-settings-refusal-unnamed',
      description:
        "A destination's settings of the wrong shape are refused without naming the field: the operator is left to guess which one",
      targets: ['destinations.settings-judged'],
      response: (req, res) =>
        req.method === 'POST' && pathOnly(req.path) === '/v1/destinations' && res.status === 400
          ? editJson(res, (b) => ({ ...b, error: { ...(b.error as Json), detail: {} } }))
          : res,
    },
    {
      id: 'destination-settings-refusal-message-vague',
      description:
        "A destination's settings of the wrong shape are refused with a message that names no field (only detail.fields does)",
      targets: ['destinations.settings-judged'],
      response: (req, res) =>
        req.method === 'POST' && pathOnly(req.path) === '/v1/destinations' && res.status === 400
          ? editJson(res, (b) => ({
              ...b,
              error: { ...(b.error as Json), message: 'Invalid destination settings' },
            }))
          : res,
    },
    {
      id: 'cloudevents-mode-unanswered',
      description:
        'A cloudevents destination created without a mode answers no mode: the default it will use is unsaid',
      targets: ['destinations.settings-judged'],
      response(req, res) {
        const body = req.method === 'POST' && pathOnly(req.path) === '/v1/destinations' && parseJson(req.body)
        return body && body.type === 'cloudevents' && res.status === 201
          ? editJson(res, (b) => {
              const { mode: _mode, ...config } = b.config as Json
              return { ...b, config }
            })
          : res
      },
    },
    {
      id: 'destination-agent-filter-unkept',
      description: "A renamed destination's agent_ids read back null: the change dropped its agent filter",
      targets: ['destinations.agent-filter'],
      response: (req, res) =>
        req.method === 'GET' && DESTINATION.test(pathOnly(req.path)) && res.status === 200
          ? editJson(res, (b) => (String(b.name).endsWith('-renamed') ? { ...b, agent_ids: null } : b))
          : res,
    },
    {
      id: 'slack-click-replay-accepted',
      description:
        'A Slack click sent again, byte for byte with its signature, is acknowledged as if new: whoever saw the request can repeat it',
      targets: ['destinations.slack-approve-from-chat'],
      response(req, res) {
        if (req.method !== 'POST' || !/^\/integrations\/slack\/[^/]+\/interactions$/.test(pathOnly(req.path)))
          return res
        const key = `${req.headers['x-slack-signature'] ?? ''} ${req.body}`
        const again = seenSlackClicks.has(key)
        seenSlackClicks.add(key)
        return again && res.status === 401 ? { ...res, status: 200, body: '' } : res
      },
    },
    {
      id: 'slack-message-empty',
      description:
        'A Slack message goes out with neither text nor blocks: Slack answers no_text and shows nothing',
      targets: ['destinations.slack-incoming-webhook'],
      delivery: rewriteDelivery(slackMessage, ({ text: _text, blocks: _blocks, ...rest }) => ({
        ...rest,
        blocks: [],
      })),
    },
    {
      id: 'slack-text-object-markdown',
      description:
        'Section blocks carry text objects of type "markdown" (Block Kit knows mrkdwn and plain_text): Slack refuses the message',
      targets: ['destinations.slack-incoming-webhook'],
      delivery: rewriteSlackBlocks((block) =>
        block.type === 'section' ? { ...block, text: { type: 'markdown', text: 'changed' } } : block,
      ),
    },
    {
      id: 'slack-input-unescaped',
      description:
        "Slack messages show a run's input with its &, < and > as they came: an input's <!channel> pings the whole channel",
      targets: ['destinations.slack-incoming-webhook'],
      delivery: rewriteDelivery(slackMessage, (b) => unescapeSlack(b)),
    },
    {
      id: 'slack-webhook-url-answered',
      description:
        "Reading a slack destination answers its webhook URL, the token in it included: the chat channel's credential leaks",
      targets: ['destinations.slack-incoming-webhook'],
      request(req) {
        const body = req.method === 'POST' && pathOnly(req.path) === '/v1/destinations' && parseJson(req.body)
        if (body && body.type === 'slack') slackSecrets.push(body.secrets)
        return req
      },
      response: (req, res) =>
        req.method === 'GET' && DESTINATION.test(pathOnly(req.path))
          ? editJson(res, (b) =>
              b.type === 'slack'
                ? { ...b, config: { ...(b.config as Json), ...(slackSecrets.at(-1) as Json) } }
                : b,
            )
          : res,
    },
    {
      id: 'pagerduty-severity-high',
      description:
        'PagerDuty triggers carry severity "high", outside critical/error/warning/info: PagerDuty refuses them',
      targets: ['destinations.pagerduty-events-v2'],
      delivery: rewriteDelivery(pagerDutyEvent, (b) =>
        b.event_action === 'trigger' ? { ...b, payload: { ...(b.payload as Json), severity: 'high' } } : b,
      ),
    },
    {
      id: 'pagerduty-severity-change-ignored',
      description:
        "A change of a pagerduty destination's severity is answered 200 but not kept: its incidents keep the first",
      targets: ['destinations.pagerduty-events-v2'],
      request(req) {
        const body = req.method === 'PATCH' && DESTINATION.test(pathOnly(req.path)) && parseJson(req.body)
        if (!body || typeof body.config !== 'object' || body.config === null) return req
        return {
          ...req,
          body: JSON.stringify({ ...body, config: { ...(body.config as Json), severity: 'critical' } }),
        }
      },
    },
    {
      id: 'pagerduty-no-routing-key',
      description: 'PagerDuty events go out without the routing_key: no service would ever get them',
      targets: ['destinations.pagerduty-events-v2'],
      delivery: rewriteDelivery(pagerDutyEvent, ({ routing_key: _key, ...rest }) => rest),
    },
    {
      id: 'pagerduty-dedup-key-per-request',
      description:
        'Each PagerDuty event gets a fresh dedup_key: repeats open new incidents and a resolve closes none',
      targets: ['destinations.pagerduty-events-v2'],
      delivery: rewriteDelivery(pagerDutyEvent, (b) => ({
        ...b,
        dedup_key: `agentops:${randomBytes(8).toString('hex')}`,
      })),
    },
    {
      id: 'pagerduty-incident-per-agent',
      description:
        "PagerDuty incidents are keyed by agent, not by run: an agent's second run pages into its first run's incident, and the first run's end closes both",
      targets: ['destinations.pagerduty-events-v2'],
      delivery: rewriteDelivery(pagerDutyEvent, (b) => {
        const details = b.payload as Json | undefined
        const agent = (details?.custom_details as Json | undefined)?.agent_id
        const original = String(b.dedup_key)
        if (b.event_action === 'trigger' && typeof agent === 'string')
          incidentKeys.set(original, `agentops:agent:${agent}`)
        const key = incidentKeys.get(original)
        return key ? { ...b, dedup_key: key } : b
      }),
    },
    {
      id: 'test-send-without-outcome',
      description:
        "A test send of a run's end carries no outcome, which every real run.succeeded, run.failed and run.cancelled has: a receiver tried on the sample breaks on the real thing",
      targets: ['destinations.test-sends-each-kind'],
      delivery: rewriteDelivery(
        (b) => b.test === true && typeof b.outcome === 'object',
        ({ outcome: _outcome, ...rest }) => rest,
      ),
    },
    {
      id: 'slack-refusal-without-envelope',
      description:
        'A Slack interaction refused is a bare 401 with no error envelope: nothing says why, nor which code',
      targets: ['destinations.slack-approve-from-chat'],
      response: (req, res) =>
        req.method === 'POST' &&
        /^\/integrations\/slack\/[^/]+\/interactions$/.test(pathOnly(req.path)) &&
        res.status === 401
          ? { ...res, body: '' }
          : res,
    },
    {
      id: 'slack-text-says-nothing',
      description:
        "Slack messages' text, the notification a person sees first, is one sentence for every event: it names no run, agent or tool and not what happened",
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteDelivery(slackMessage, (b) => ({ ...b, text: 'New Agent Operations event' })),
    },
    {
      id: 'slack-facts-unlabelled',
      description:
        "A Slack message's fields show the facts' values without their labels: a person reads a step id, a queue and a count and cannot tell which is which",
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks(
        withFields((fields) =>
          fields.map((f) =>
            typeof f.text === 'string' ? { ...f, text: f.text.replace(/^\*[^*\n]*\*\n/, '') } : f,
          ),
        ),
      ),
    },
    {
      id: 'slack-sentence-says-nothing',
      description:
        "A Slack message's sentence under its header is the same for every event: it names neither what happened nor to which run, step, tool or agent",
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks((block, i, blocks) =>
        i === blocks.findIndex((b) => b.type === 'section')
          ? { ...block, text: { type: 'mrkdwn', text: 'Something needs a look.' } }
          : block,
      ),
    },
    {
      id: 'slack-fact-shows-undefined',
      description:
        'A Slack message shows a fact its event does not have as the word the program printed for it ("Reason: undefined"): a person reads a value that is none',
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks(
        withFields((fields) => [...fields, { type: 'mrkdwn', text: '*Reason*\nundefined' }]),
      ),
    },
    {
      id: 'slack-cancel-reason-dropped',
      description:
        "A Slack message about a cancelled run leaves out its outcome's error: a run ended because its agent was deleted reads like one a person cancelled",
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteDelivery(
        (b) => slackMessage(b) && JSON.stringify(b).includes('run.cancelled'),
        (b) => ({ ...b, blocks: (b.blocks as Json[]).map(withoutField('Error')) }),
      ),
    },
    {
      id: 'slack-count-only-in-an-id',
      description:
        'A Slack message about a policy denial leaves out what the policy observed and its limit: the only 4 and 3 left in it are parts of ids (step_4, a tool named …-3)',
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks(withoutField('Observed / limit')),
    },
    {
      id: 'slack-sentence-says-the-code',
      description:
        'A Slack message\'s sentence ends in the event\'s code ("Run run_… of agent agt_… run.failed.") where it should say what happened in words',
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks((block, i, blocks) => {
        const text = (block.text as Json | undefined)?.text
        return i === blocks.findIndex((b) => b.type === 'section') && typeof text === 'string'
          ? {
              ...block,
              text: {
                type: 'mrkdwn',
                text: text.replace(/ (started|succeeded|failed|paused|resumed|cancelled)\.$/, ' run.$1.'),
              },
            }
          : block
      }),
    },
    {
      id: 'slack-header-without-emoji',
      description:
        "A Slack message's header is its title alone, with no emoji: an approval or a failure reads like any other line in the channel",
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks((block) => {
        const text = (block.text as Json | undefined)?.text
        return block.type === 'header' && typeof text === 'string'
          ? { ...block, text: { ...(block.text as Json), text: text.replace(/^:[a-z0-9_+-]+: /, '') } }
          : block
      }),
    },
    {
      id: 'slack-failure-looks-informational',
      description:
        'Every Slack header shows the same emoji: a failed run or a denied step looks like an agent created',
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteSlackBlocks((block) => {
        const text = (block.text as Json | undefined)?.text
        return block.type === 'header' && typeof text === 'string'
          ? {
              ...block,
              text: {
                ...(block.text as Json),
                text: text.replace(/^:[a-z0-9_+-]+:/, ':information_source:'),
              },
            }
          : block
      }),
    },
    {
      id: 'pagerduty-resolve-as-acknowledge',
      description:
        'A PagerDuty resolve goes out as acknowledge: the incident a cancelled run opened stays open, only silenced',
      targets: ['destinations.chat-and-paging-say-what-happened'],
      delivery: rewriteDelivery(pagerDutyEvent, (b) =>
        b.event_action === 'resolve' ? { ...b, event_action: 'acknowledge' } : b,
      ),
    },
    {
      id: 'slack-run-unlinked',
      description:
        "A Slack message shows its run's id as plain text where the operator set the server's public URL: the person who must approve cannot open the run from the message",
      targets: ['destinations.messages-link-the-run'],
      delivery: rewriteDelivery(slackMessage, (b) =>
        JSON.parse(JSON.stringify(b).replace(/<(https?:[^<>|]+)\|([^<>]*)>/g, '`$2`')),
      ),
    },
    {
      id: 'pagerduty-links-another-run',
      description:
        "A PagerDuty incident's link names another run (the last one paged, say): the responder opens the wrong run",
      targets: ['destinations.messages-link-the-run'],
      delivery: rewriteDelivery(pagerDutyEvent, (b) => {
        if (!Array.isArray(b.links)) return b
        const wrong = (href: unknown) =>
          typeof href === 'string' ? href.replace(/\/runs\/[^/?#]+/, '/runs/run_01another') : href
        return {
          ...b,
          client_url: wrong(b.client_url),
          links: b.links.map((l) =>
            l && typeof l === 'object' ? { ...l, href: wrong((l as Json).href) } : l,
          ),
        }
      }),
    },
    {
      id: 'pagerduty-run-link-unlisted',
      description:
        "A PagerDuty incident names its run's page only as client_url (the sending client's page), with no links: the incident a responder opens lists no way to the run",
      targets: ['destinations.messages-link-the-run'],
      delivery: rewriteDelivery(pagerDutyEvent, ({ links: _dropped, ...rest }) => rest),
    },
    {
      id: 'slack-test-send-reads-real',
      description:
        'A Slack test send\'s notification text reads as a real event (no "(test)" in it): the person it pings may act on the made-up run',
      targets: ['destinations.slack-incoming-webhook'],
      delivery: rewriteDelivery(slackMessage, (b) =>
        typeof b.text === 'string' ? { ...b, text: b.text.replace(' (test)', '') } : b,
      ),
    },
    {
      id: 'test-send-default-fixed',
      description:
        "A test send naming no kind is always of run.awaiting_approval, not of the destination's first kind: a channel listing only other kinds is sent a sample of a kind it never gets",
      targets: ['destinations.test-sends-each-kind'],
      request(req) {
        if (req.method !== 'POST' || !/^\/v1\/destinations\/[^/]+\/test$/.test(pathOnly(req.path))) return req
        const body = parseJson(req.body) ?? {}
        return 'event' in body ? req : { ...req, body: JSON.stringify({ event: 'run.awaiting_approval' }) }
      },
    },
    {
      id: 'test-send-unmarked',
      description:
        'A test send arrives without test: true: a receiver, or a person reading the channel, takes the made-up event for a real one',
      targets: ['destinations.test-sends-each-kind'],
      delivery: rewriteDelivery(
        (b) => b.test === true,
        ({ test: _dropped, ...rest }) => rest,
      ),
    },
    {
      id: 'test-send-run-status-is-its-kind',
      description:
        'The sample of a run lifecycle event carries the kind word as its status (run.started says status "started", which no run has), not the status a real one announces',
      targets: ['destinations.test-sends-each-kind'],
      delivery: rewriteDelivery(
        (b) => b.test === true && typeof b.event === 'string' && b.event.startsWith('run.'),
        (b) => (typeof b.status === 'string' ? { ...b, status: String(b.event).slice(4) } : b),
      ),
    },
    {
      id: 'cloudevent-id-per-request',
      description:
        'Each binary-mode CloudEvent gets a fresh ce-id rather than the event id: a retry looks like another event to every sink',
      targets: ['destinations.cloudevents-binary'],
      delivery: (req) =>
        req.headers['ce-id'] === undefined
          ? req
          : { ...req, headers: { ...req.headers, 'ce-id': `ce-${randomBytes(8).toString('hex')}` } },
    },
    {
      id: 'cloudevent-structured-subject-agent',
      description:
        "A structured-mode CloudEvent names the agent as its subject whatever the event is about: a run or task event reads as the agent's",
      targets: ['destinations.cloudevents-structured'],
      delivery: rewriteDelivery(structuredCloudEvent, (b) => {
        const data = b.data as Json
        return typeof data.agent_id === 'string' ? { ...b, subject: data.agent_id } : b
      }),
    },
    {
      id: 'destination-secret-answered',
      description:
        'Reading a destination answers the secrets it was created with: write-only credentials leak',
      targets: ['destinations.cloudevents-binary'],
      request(req) {
        if (req.method === 'POST' && pathOnly(req.path) === '/v1/destinations') {
          try {
            secrets.push((JSON.parse(req.body) as { secrets?: unknown }).secrets)
          } catch {
            // not JSON: nothing to remember
          }
        }
        return req
      },
      response: (req, res) =>
        req.method === 'GET' && DESTINATION.test(pathOnly(req.path))
          ? editJson(res, (b) => ({ ...b, secrets: secrets.at(-1) }))
          : res,
    },
  ]
}
