/**
 * Profile checks come in two kinds. Most hold the reference profile's own choice where the spec is silent: a
 * foreign deployment may differ there and still be correct, so their failures are only "differs from the
 * reference where the spec is silent", named here by the spec's gap. The rest (not listed here) check a spec
 * sentence, quoted through their clauses (statements.ts), in a way that cannot be core yet; their failures are
 * reported apart, first.
 */

/** The spec's own words for the gaps profile checks fill (each a "not shown" line, or what the spec leaves out). */
export const GAPS = {
  signedString: '§5 "The exact string that is signed and how the timestamp is checked: not shown"',
  errorCodes: '§7 "Error codes other than `policy_denied`: not shown"',
  rateLimitNames: '§8 "Names of the rate-limit headers: not shown"',
  successCodes:
    '§4 "Success status codes of endpoints other than start run (201), inspect run (200) and batch ingest (202): not shown"',
  controlBodies: '§4 "Response bodies of pause, resume and cancel: not shown"; §3 "Transitions: not shown"',
  traceChoice:
    '§4 "The way a client chooses between streaming and paging for the trace: not shown"; §2 "Allowed values of trace `kind` and `policy` beyond the two named: not shown"',
  runBodyValues: '§2 "Allowed values of `mode` and `trace_level` beyond the two named: not shown"',
  toolBodies:
    '§4 "Request and response bodies of list, inspect and retire for tools, and the response to tool creation: not shown"',
  pageShape: '§8 "The response field that carries the next cursor: not shown"',
  defaultLimit: '§8 "Default `limit` value: not shown"',
  overLimit: '§8 "Maximum `limit` is 200" (what a larger or smaller limit gets is not shown)',
  rejectReasons: '§7 "Reasons for rejected ingest records: not shown"',
  lineage:
    '§2 Batch ingest response "lineage_root | string" (how the root is computed and read back is not shown)',
  streamMessages: '§4 "The messages a client sends to subscribe to stream topics: not shown"',
  pushLatency:
    '§4 "The server pushes records, with lineage, as they land" (how soon after their commit is not shown); §4 "The messages a client sends to subscribe to stream topics: not shown"',
  graphql: '§4 "A GraphQL surface is mentioned; its shape is not shown"',
  receiverSuccess:
    '§6 "What response from the receiver counts as success: not shown"; "Retry count and backoff timing: not shown"',
  eventKinds:
    '§6 "Any other event kinds: not shown"; "Delivery bodies of events other than `run.awaiting_approval`: not shown"',
  subscriptionRules:
    '§2 Webhook subscription body "url | string | Delivery address.", "secret | string | Signing secret for deliveries", §6 "Any other event kinds: not shown" (which subscriptions a deployment refuses is not shown)',
  extensions: '§4 lists no such endpoint (the reference profile’s extensions)',
  errorHeaders: '§5.2 and §7 name the 401 and 429 statuses only (their headers are not shown)',
  streamPlainGet:
    '§4 "GET (WebSocket) | `{stream_url}/v1/stream`" (what a GET without the WebSocket upgrade gets is not shown)',
  errorDetail: '§7 "error.detail | object | Context." (its fields are shown for `policy_denied` only)',
  statusesBeyond:
    '§7 lists the statuses it shows; the others a deployment answers (413, 415, 405) are not shown',
  idempotencyReplay:
    '§8 "Idempotency-Key header on all POST requests ... Reuse with a different body yields 409" (what a replay answers is not shown)',
  idempotencyQuotas:
    '§8 "Idempotency-Key header on all POST requests. The window is 24 hours." (how much a workspace may keep, and which refusals a key keeps, is not shown)',
  idempotencyKeyForm:
    '§8 "`Idempotency-Key` header on all POST requests" (what a key may hold, its length and characters, is not shown)',
  tokenForms:
    '§5 "Every API request carries `Authorization: Bearer <API_KEY>`" (other spellings of it, and a token carried elsewhere, are not shown)',
  keyLifecycle: '§5 "How keys are issued and rotated: not shown"',
  responseBodies:
    '§2 "Agent response fields: not shown", "Task response fields: not shown", "Webhook subscription response fields: not shown"',
  envelopes:
    '§1 "carries the policy envelope that was resolved when it started" (which envelopes exist, their limits and queues, and which calls wait for approval are not shown)',
  planning:
    '§2 "inputs | object | Free-form input values for the agent" and "capabilities | array | List of enabled capabilities" (how a run’s plan is chosen, which envelope it runs under and what a start without `mode` or `trace_level` gets are not shown)',
  agentRuns:
    '§4 "DELETE /v1/agents/{id} | Terminates and deletes the agent" and "POST /v1/agents/{id}/tasks | Assigns a task to the agent" (what becomes of the agent’s runs, and the run a task starts, are not shown)',
  routing: '§6 "How routing to chat and paging destinations is configured: not shown"',
  keyQuotas:
    '§8 lists pagination, idempotency, rate limits and priority (how many stream connections and topics one key may hold open is not shown)',
  awaitingApprovalBody:
    '§6 "Delivery body of `run.awaiting_approval`" lists its fields (whether a body may carry others, its event id among them, is not shown)',
  workspaceQuotas:
    '§8 lists pagination, idempotency, rate limits and priority (how many tools, webhook subscriptions and destinations a workspace may keep is not shown)',
  connectorIds:
    '§4 "POST | `/v1/grid/connectors/{id}/ingest`" (what a connector id may hold, its length and characters, is not shown)',
  toolProviders:
    '§2 "provider | string | Provider identifier." (which providers exist, their settings, and what a call sends and gets back are not shown)',
} as const

/** Each gap-filling profile check and the gap it fills. */
export const PROFILE_GAPS: Record<string, string> = {
  'auth.www-authenticate': GAPS.errorHeaders,
  'auth.refusal-reason': GAPS.errorDetail,
  'auth.bearer-forms': GAPS.tokenForms,
  'auth.revoked-token-401': GAPS.keyLifecycle,
  'stream.access-token-query': GAPS.tokenForms,
  'stream.plain-get-refused': GAPS.streamPlainGet,
  'validation.invalid-request-detail': GAPS.errorDetail,
  'authz.scope-detail-values': GAPS.errorCodes,
  'authz.gate-decisions-recorded': GAPS.envelopes,
  'surface.documented-statuses': GAPS.statusesBeyond,
  'surface.error-paths': GAPS.statusesBeyond,
  'ratelimit.exact-limit': GAPS.rateLimitNames,
  'ratelimit.retry-hint': GAPS.errorHeaders,
  'ratelimit.header-format': GAPS.rateLimitNames,
  'ratelimit.429-every-operation': GAPS.statusesBeyond,
  'ratelimit.recovers-after-retry-after': GAPS.errorHeaders,
  'webhooks.signature-verifies': GAPS.signedString,
  'webhooks.signature-binds-body-and-secret': GAPS.signedString,
  'webhooks.timestamp-fresh': GAPS.signedString,
  'webhooks.standard-webhooks-headers': GAPS.signedString,
  'webhooks.every-event-kind': GAPS.eventKinds,
  'webhooks.retried-after-failure': GAPS.receiverSuccess,
  'webhooks.receiver-answer-judged': GAPS.receiverSuccess,
  'webhooks.subscription-refusals': GAPS.subscriptionRules,
  'webhooks.secret-rotation': GAPS.extensions,
  'surface.extension-operations': GAPS.extensions,
  'resources.created-codes': GAPS.successCodes,
  'readback.run-events-match-the-run': GAPS.eventKinds,
  'runs.cancel-state': GAPS.controlBodies,
  'runs.pause-resume-states': GAPS.controlBodies,
  'runs.trace-sequence': GAPS.traceChoice,
  'runs.trace-paging': GAPS.traceChoice,
  'runs.trace-streaming': GAPS.traceChoice,
  'runs.trace-pushed-promptly': GAPS.traceChoice,
  'runs.trace-cursor-resumes': GAPS.traceChoice,
  'runs.start-body-validation': GAPS.runBodyValues,
  'runs.trace-levels-and-outcomes': GAPS.runBodyValues,
  'runs.plan-choice': GAPS.planning,
  'runs.task-run-inputs': GAPS.agentRuns,
  'runs.agent-delete-cancels-runs': GAPS.agentRuns,
  'runs.control-events': GAPS.eventKinds,
  'tools.registration-shape': GAPS.toolBodies,
  'tools.retired-stays-readable': GAPS.toolBodies,
  'tools.provider-calls': GAPS.toolProviders,
  'tools.registration-refusals': GAPS.toolProviders,
  'tools.lifecycle-events': GAPS.eventKinds,
  'scoping.webhook-404': GAPS.extensions,
  'scoping.connector-records-404': GAPS.extensions,
  'idempotency.replay-byte-identical': GAPS.idempotencyReplay,
  'idempotency.conflict-codes': GAPS.errorCodes,
  'idempotency.key-form': GAPS.idempotencyKeyForm,
  'idempotency.refusal-stored': GAPS.idempotencyReplay,
  'idempotency.quota-refusals': GAPS.idempotencyQuotas,
  'ingest.rejections-explained': GAPS.rejectReasons,
  'ingest.lineage-root-merkle': GAPS.lineage,
  'ingest.records-read-back': GAPS.extensions,
  'stream.topic-scope-refused': GAPS.streamMessages,
  'stream.resume-after-seq-exclusive': GAPS.streamMessages,
  'stream.protocol-messages': GAPS.streamMessages,
  'stream.records-with-lineage': GAPS.streamMessages,
  'stream.pushed-promptly': GAPS.pushLatency,
  'ingest.connector-id-pattern': GAPS.connectorIds,
  'validation.fuzz-invalid-request-code': GAPS.errorCodes,
  'destinations.cloudevents-binary': GAPS.routing,
  'destinations.cloudevents-structured': GAPS.routing,
  'destinations.slack-incoming-webhook': GAPS.routing,
  'destinations.pagerduty-events-v2': GAPS.routing,
  'destinations.operations': GAPS.routing,
  'destinations.event-bus': GAPS.routing,
  'destinations.slack-retry-after': GAPS.routing,
  'destinations.slack-approve-from-chat': GAPS.routing,
  'destinations.chat-and-paging-say-what-happened': GAPS.routing,
  'destinations.test-sends-each-kind': GAPS.routing,
  'destinations.agent-filter': GAPS.routing,
  'webhooks.gives-up-after-max-attempts': GAPS.receiverSuccess,
  'stream.bad-messages-refused': GAPS.streamMessages,
  'stream.socket-ingest-judged-like-rest': GAPS.streamMessages,
  'stream.socket-ingest-rate-limited': GAPS.streamMessages,
  'stream.subscriptions-per-connection': GAPS.streamMessages,
  'stream.key-quotas': GAPS.keyQuotas,
  'quotas.room-returns': GAPS.workspaceQuotas,
  'webhooks.awaiting-approval-body-exact': GAPS.awaitingApprovalBody,
  'graphql.ws-key-quotas': GAPS.graphql,
  'graphql.ws-rate-limited': GAPS.graphql,
  'pagination.limit-over-200-400': GAPS.overLimit,
  'pagination.page-shape': GAPS.pageShape,
  'pagination.default-limit-50': GAPS.defaultLimit,
  'pagination.bad-cursor-code': GAPS.errorCodes,
  'graphql.agent-matches-rest': GAPS.graphql,
  'graphql.run-with-agent-and-trace': GAPS.graphql,
  'graphql.foreign-id-like-missing': GAPS.graphql,
  'graphql.policy-denied-extensions': GAPS.graphql,
  'graphql.mutation-idempotency': GAPS.graphql,
  'graphql.page-limits': GAPS.graphql,
  'graphql.cost-limit': GAPS.graphql,
  'graphql.subscription-run-events': GAPS.graphql,
  'graphql.requires-auth': GAPS.graphql,
  'graphql.http-request-forms': GAPS.graphql,
  'graphql.document-limits': GAPS.graphql,
  'graphql.tools-and-tasks': GAPS.graphql,
  'graphql.webhooks-and-destinations': GAPS.graphql,
  'graphql.run-mutations': GAPS.graphql,
  'graphql.ws-authentication': GAPS.graphql,
  'graphql.ws-subscriptions': GAPS.graphql,
  'graphql.records-and-schema': GAPS.graphql,
  'graphql.schema-documents-scopes': GAPS.graphql,
  'graphql.idempotency-keys-mutations-only': GAPS.graphql,
  'graphql.field-scopes': GAPS.graphql,
  'graphql.introspection-cost': GAPS.graphql,
  'sweep.ratelimit-header-names': GAPS.rateLimitNames,
  'sweep.request-id-header': GAPS.errorHeaders,
  'sweep.bodies-match-openapi': GAPS.responseBodies,
}
