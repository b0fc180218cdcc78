/**
 * The normative statements of the Agent Operations API spec, numbered section by section (S<section>.<n>). Checks
 * name the statements they verify (`clauses`); `traceability.md` and the coverage figure are generated from both.
 * A statement no check can verify says why (`unchecked`); a partial note says what a check cannot observe.
 */
export interface Statement {
  id: string
  text: string
  /** Why no check verifies this statement (required when none does). */
  unchecked?: string
  /** What the checks of this statement leave out, and why. */
  note?: string
}

export const STATEMENTS: Statement[] = [
  { id: 'S1.1', text: 'REST is used for configuration, resource management and inspection.' },
  { id: 'S1.2', text: 'A WebSocket stream and outbound webhooks carry live events.' },
  {
    id: 'S1.3',
    text: 'Every call is scoped by an agent identity and checked by a policy gate, which can refuse with 403 `policy_denied`.',
  },
  {
    id: 'S1.4',
    text: 'A run belongs to one agent and carries the policy envelope resolved when it started.',
  },
  { id: 'S1.5', text: 'Each tool is registered with a policy binding.' },
  {
    id: 'S1.6',
    text: 'Ingestion feeds records by connector, as a REST batch or over a streaming socket; each record has a source, a timestamp and a policy class.',
  },
  {
    id: 'S1.7',
    text: 'Agents can be created, retrieved and deleted; tasks can be assigned to agents and read back.',
  },
  { id: 'S1.8', text: 'Every state change emits an event; events go to webhook subscribers.' },
  { id: 'S1.9', text: 'Paths carry the `/v1` prefix under `{base_url}`.' },
  { id: 'S1.10', text: 'Bodies are `application/json`, UTF-8.' },
  { id: 'S1.11', text: 'Timestamps are RFC 3339 strings.' },
  { id: 'S1.12', text: 'The stream is at `{stream_url}/v1/stream` (WebSocket).' },
  {
    id: 'S2.1',
    text: 'A run has `run_id`, `agent_id`, `status`, `policy_envelope`, `trace_url`, `created_at` (at start) and `started_at`, `plan`, `awaiting`, `trace_cursor` (on inspection).',
  },
  { id: 'S2.2', text: '`trace_url` has the form `/v1/runs/<run_id>/trace`.' },
  {
    id: 'S2.3',
    text: '`plan` has integer `steps_total`, `steps_completed`, `steps_pending`, `steps_escalated`.',
  },
  { id: 'S2.4', text: '`awaiting` items have `step_id`, `queue` and `reason` strings.' },
  {
    id: 'S2.5',
    text: 'The run start body has `inputs` (object), `mode` (`live` exists) and `trace_level` (`detailed` exists).',
  },
  {
    id: 'S2.6',
    text: 'Trace frames have `ts` (RFC 3339), `step_id`, `kind` (`tool.call` exists), `tool` on tool-call frames, `policy` (`allow` exists), integer `latency_ms`, `result`.',
  },
  {
    id: 'S2.7',
    text: 'A tool registration has `name`, `provider`, `input_schema` (a JSON schema or a reference to one), `output_schema`, `policy_binding` {`envelope`, `required_scopes`}, `idempotent`.',
  },
  {
    id: 'S2.8',
    text: 'Agent create: `name` and `behavior` are required; `behavior` is one of `autonomous`, `supervised`, `hybrid`; `capabilities` is an array.',
  },
  { id: 'S2.9', text: 'Task assign: `description` is required; `priority` is an integer from 1 to 5.' },
  { id: 'S2.10', text: 'An ingest record has `id`, `ts` (RFC 3339), `source`, `policy_class`, `body`.' },
  {
    id: 'S2.11',
    text: 'The batch ingest response has integer `accepted`, integer `rejected` and `lineage_root`.',
  },
  { id: 'S2.12', text: 'A webhook subscription has `url`, `events` and `secret`.' },
  { id: 'S2.13', text: 'The trace lists every step, tool call, policy decision and approval in order.' },
  { id: 'S3.1', text: "A run's status is `queued` right after start." },
  { id: 'S3.2', text: 'A run waiting for approval in one or more queues has status `awaiting_approval`.' },
  { id: 'S3.3', text: '`pause` suspends the scheduler.' },
  { id: 'S3.4', text: '`cancel` marks the run terminal and flushes any pending approvals.' },
  {
    id: 'S3.5',
    text: 'The event kinds `run.started`, `run.awaiting_approval`, `run.succeeded`, `run.failed` exist.',
  },
  { id: 'S4.1', text: 'All endpoints require authentication.' },
  { id: 'S4.2', text: 'Every POST accepts an `Idempotency-Key` header.' },
  {
    id: 'S4.3',
    text: '`POST /v1/agents/{agent_id}/runs` answers 201 with `run_id`, `agent_id`, `status`, `policy_envelope`, `trace_url`, `created_at`.',
  },
  {
    id: 'S4.4',
    text: '`GET /v1/runs/{run_id}` answers 200 with `run_id`, `status`, `plan`, `awaiting`, `started_at`, `trace_cursor`.',
  },
  { id: 'S4.5', text: '`POST /v1/runs/{run_id}/pause`, `/resume`, `/cancel` control the run.' },
  {
    id: 'S4.6',
    text: '`GET /v1/runs/{run_id}/trace` takes cursor pagination parameters and returns the frames in order, as a stream or as pages.',
  },
  {
    id: 'S4.7',
    text: '`POST /v1/tools` registers, `GET /v1/tools` lists, `GET /v1/tools/{tool_id}` inspects a tool.',
  },
  {
    id: 'S4.8',
    text: '`DELETE /v1/tools/{tool_id}` retires the tool; historical runs stay intact and their traces still reference it by id.',
  },
  {
    id: 'S4.9',
    text: '`POST /v1/grid/connectors/{id}/ingest` answers 202 with `accepted`, `rejected`, `lineage_root`.',
  },
  {
    id: 'S4.10',
    text: 'The stream pushes connector records, with lineage, as they land, to subscribers of connector topics.',
    note: 'the subscribe messages are not shown in the spec',
  },
  { id: 'S4.11', text: '`POST /v1/webhooks` creates a subscription.' },
  { id: 'S4.12', text: "The service POSTs event deliveries to the subscriber's own `url`." },
  {
    id: 'S4.13',
    text: '`POST /v1/agents` creates, `GET /v1/agents/{id}` returns details and status, `DELETE /v1/agents/{id}` terminates and deletes an agent.',
  },
  {
    id: 'S4.14',
    text: '`POST /v1/agents/{id}/tasks` assigns a task; `GET /v1/tasks/{id}` returns its status and results.',
  },
  {
    id: 'S4.15',
    text: 'A GraphQL surface is mentioned.',
    note: 'its shape is not shown: the reference’s schema is judged by profile checks; a declared surface is judged by the spec’s rules (auth, tenancy, scopes, rate-limit headers) and by GraphQL’s own request rules, which hold for every schema',
  },
  {
    id: 'S5.1',
    text: 'Every API request carries `Authorization: Bearer <API_KEY>`; the token is an agent identity.',
  },
  { id: 'S5.2', text: 'A missing or expired bearer token yields 401.' },
  { id: 'S5.3', text: 'The stream requires a bearer token and a scope for each topic it subscribes to.' },
  { id: 'S5.4', text: 'A tool declares `required_scopes` in its policy binding.' },
  {
    id: 'S5.5',
    text: 'Webhook deliveries are authenticated by HMAC-SHA256; the body carries `signature` of the form `t=<timestamp>,v1=<hex_digest>`.',
    note: 'the signed string is not shown: core accepts any common construction under the subscription’s secret, the profile fixes one',
  },
  {
    id: 'S5.6',
    text: 'A resource that does not exist, or is out of scope for the calling identity, yields 404.',
  },
  { id: 'S6.1', text: 'Webhook deliveries are signed with HMAC SHA-256.' },
  {
    id: 'S6.2',
    text: 'Webhook deliveries are retried with exponential backoff.',
    note: 'core: a delivery answered 500 is sent again; the backoff timing is not shown, so only the profile looks at it',
  },
  {
    id: 'S6.3',
    text: '`events` subscribes to `run.started`, `run.awaiting_approval`, `run.succeeded`, `run.failed`, `policy.denied`; a subscription gets the kinds it lists.',
  },
  {
    id: 'S6.4',
    text: 'The `run.awaiting_approval` delivery body has `event`, `ts`, `run_id`, `agent_id`, `step_id`, `queue`, `reason`, `payload_preview` (object), `signature`.',
  },
  {
    id: 'S6.5',
    text: 'Events can be routed to webhooks and to chat, paging and downstream systems.',
    note: 'how routing is configured is not shown: only the profile checks the reference’s /v1/destinations',
  },
  {
    id: 'S6.6',
    text: 'Every state change emits an event.',
    note: 'one change, one event: where a deployment names its events (a body `id`, a `webhook-id` header), a subscription’s deliveries of one change carry one id, retries included; which changes beyond the five kinds emit events is not shown',
  },
  {
    id: 'S7.1',
    text: 'An error body has `error.code`, `error.message`, `error.detail` (object) and `error.request_id`.',
  },
  {
    id: 'S7.2',
    text: 'For `policy_denied`, `detail` has `envelope`, `violation`, `observed`, `limit` and `escalation_queue`.',
  },
  { id: 'S7.3', text: '400: schema mismatch or malformed body.' },
  { id: 'S7.4', text: '401: missing or expired bearer token.' },
  {
    id: 'S7.5',
    text: '403: the policy gate refused the action (`policy_denied`); the escalation queue is named in `detail`.',
  },
  { id: 'S7.6', text: '404: not found or out of scope.' },
  { id: 'S7.7', text: '409: an idempotency key was reused with a different body.' },
  { id: 'S7.8', text: '429: the rate limit is exceeded.' },
  { id: 'S7.9', text: '5xx means a transient failure (so bad input never gets one).' },
  { id: 'S8.1', text: 'Pagination is cursor-based with query parameters `cursor` and `limit`.' },
  { id: 'S8.2', text: 'The maximum `limit` is 200.' },
  {
    id: 'S8.3',
    text: '`Idempotency-Key` works on all POST requests with a 24-hour window.',
    note: 'the 24 h expiry itself is not observable in a short run',
  },
  { id: 'S8.4', text: 'Reusing an idempotency key with a different body yields 409.' },
  { id: 'S8.5', text: 'The rate limit is scoped per workspace.' },
  { id: 'S8.6', text: 'Burst and sustained rate-limit headers are present on every response.' },
  {
    id: 'S8.7',
    text: 'Standard tier: 1,000 requests per hour; Pro tier: 10,000; Enterprise: custom.',
    note: "read from the hourly window a declared standard-tier and pro-tier workspace announce (which tier a workspace is on is the operator's doing); the enterprise tier's custom limits have no figure to judge",
  },
  { id: 'S8.8', text: 'Task priority is an integer from 1 (low) to 5 (critical).' },
  { id: 'S8.9', text: 'Exceeding the rate limit yields 429.' },
  { id: 'S9.1', text: 'The major version is in the path (`/v1`).' },
  {
    id: 'S9.2',
    text: 'Feature flags are set per workspace.',
    unchecked: 'how flags are enabled is not shown, and no endpoint exposes them',
  },
]
