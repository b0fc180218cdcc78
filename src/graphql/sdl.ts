/**
 * The GraphQL schema, written once. Every object type mirrors the contract schema of the same name (same snake_case
 * fields, types, nullability and enum values: test/graphql/model.test.ts walks both); the only extra fields are the
 * relations listed in RELATIONS. `npm run graphql:schema` prints it to openapi/agent-operations.graphql.
 */

/** GraphQL-only fields that follow a reference instead of mirroring a contract property. */
export const RELATIONS: Record<string, readonly string[]> = {
  Run: ['agent', 'trace'],
  Agent: ['runs'],
  Task: ['agent', 'run'],
  Webhook: ['deliveries'],
}

const EVENT_KINDS =
  'run.started, run.awaiting_approval, run.succeeded, run.failed, run.paused, run.resumed, run.cancelled, ' +
  'policy.denied, agent.created, agent.deleted, task.created, task.succeeded, task.failed, task.cancelled, ' +
  'tool.registered, tool.retired, ingest.batch_accepted'

const FRAME_KINDS =
  'run.started, policy.decision, tool.call, step.failed, approval.requested, approval.granted, approval.rejected, ' +
  'approval.flushed, control.paused, control.resumed, control.cancelled, run.succeeded, run.failed'

const PAGE_ARGS = `
    "Opaque cursor from the previous page's next_cursor."
    cursor: String
    "Items per page, 1 to 200 (default 50)."
    limit: Int`

export const SDL = /* GraphQL */ `
"""
Any JSON value: the contract's free-form objects (inputs, schemas, config, detail, record bodies).
"""
scalar JSON

"See x-run-state-machine in the contract."
enum RunStatus { queued running awaiting_approval paused succeeded failed cancelled }
enum RunMode { live dry_run }
enum TraceLevel { summary detailed }
enum OutcomeStatus { succeeded failed cancelled }
enum AgentBehavior { autonomous supervised hybrid }
enum AgentStatus { idle running }
enum ToolStatus { active retired }
enum PolicyDecision { allow escalate deny }
enum WebhookStatus { active disabled }
enum DeliveryStatus { pending delivered failed }
enum IngestRejectionCode { missing_field invalid_field invalid_timestamp policy_class_not_allowed duplicate_id }
enum ApprovalDecisionKind { approve reject }
"The data messages of /v1/stream that subscriptions carry."
enum StreamMessageType { record event gap }

type RunPlan {
  steps_total: Int!
  steps_completed: Int!
  steps_pending: Int!
  steps_escalated: Int!
}

type AwaitingApproval {
  step_id: String!
  queue: String!
  reason: String!
  "RFC 3339."
  requested_at: String
}

type StepResult {
  step_id: String!
  tool: String!
  tool_id: String!
  result: String!
}

type OutcomeError {
  code: String!
  message: String!
  detail: JSON
}

type RunOutcome {
  status: OutcomeStatus!
  results: [StepResult!]!
  error: OutcomeError
}

type Run {
  run_id: ID!
  agent_id: ID!
  task_id: ID
  status: RunStatus!
  mode: RunMode!
  trace_level: TraceLevel!
  inputs: JSON!
  policy_envelope: String!
  priority: Int!
  trace_url: String!
  "RFC 3339."
  created_at: String!
  started_at: String
  finished_at: String
  plan: RunPlan!
  awaiting: [AwaitingApproval!]!
  trace_cursor: String
  outcome: RunOutcome
  "The owning agent (null once it was deleted)."
  agent: Agent
  "A page of the run's trace, like GET /v1/runs/{run_id}/trace."
  trace(${PAGE_ARGS}
  ): TracePage!
}

type RunPage {
  data: [Run!]!
  next_cursor: String
}

type TraceFrame {
  seq: Int!
  "RFC 3339."
  ts: String!
  step_id: String
  "One of: ${FRAME_KINDS}."
  kind: String!
  tool: String
  tool_id: String
  policy: PolicyDecision
  latency_ms: Int
  result: String
  detail: JSON
}

type TracePage {
  data: [TraceFrame!]!
  next_cursor: String
  run_status: RunStatus!
}

type PolicyBinding {
  envelope: String!
  required_scopes: [String!]!
}

type Tool {
  tool_id: ID!
  name: String!
  provider: String!
  input_schema: JSON!
  output_schema: JSON!
  policy_binding: PolicyBinding!
  idempotent: Boolean!
  config: JSON!
  status: ToolStatus!
  created_at: String!
  retired_at: String
}

type ToolPage {
  data: [Tool!]!
  next_cursor: String
}

type Agent {
  agent_id: ID!
  name: String!
  behavior: AgentBehavior!
  capabilities: [String!]!
  policy_envelope: String!
  status: AgentStatus!
  active_runs: Int!
  created_at: String!
  updated_at: String!
  "The agent's runs, oldest first, like GET /v1/agents/{agent_id}/runs."
  runs(${PAGE_ARGS}
  ): RunPage!
}

type AgentPage {
  data: [Agent!]!
  next_cursor: String
}

type Task {
  task_id: ID!
  agent_id: ID!
  description: String!
  data_source: String
  priority: Int!
  status: RunStatus!
  run_id: ID
  result: RunOutcome
  created_at: String!
  updated_at: String!
  "The agent the task was assigned to (null once it was deleted)."
  agent: Agent
  "The run carrying the task."
  run: Run
}

type Lineage {
  leaf_hash: String!
  batch_root: String!
  batch_id: String!
  leaf_index: Int!
  batch_size: Int!
  proof: [String!]
}

type StoredRecord {
  id: String!
  ts: String!
  source: String!
  policy_class: String!
  body: JSON!
  connector_id: String!
  seq: Int!
  ingested_at: String!
  lineage: Lineage!
}

type RecordPage {
  data: [StoredRecord!]!
  next_cursor: String
}

type IngestRejection {
  index: Int!
  id: String
  code: IngestRejectionCode!
  message: String!
}

type IngestResponse {
  accepted: Int!
  rejected: Int!
  lineage_root: String!
  batch_id: String!
  rejections: [IngestRejection!]!
}

type Webhook {
  webhook_id: ID!
  url: String!
  "Each one of: ${EVENT_KINDS}."
  events: [String!]!
  status: WebhookStatus!
  created_at: String!
  secret_rotated_at: String
  "Delivery attempts of this subscription, like GET /v1/webhooks/{webhook_id}/deliveries."
  deliveries(${PAGE_ARGS}
  ): DeliveryPage!
}

type WebhookPage {
  data: [Webhook!]!
  next_cursor: String
}

type Delivery {
  delivery_id: ID!
  webhook_id: ID!
  event_id: String!
  "One of: ${EVENT_KINDS}."
  event: String!
  status: DeliveryStatus!
  attempts: Int!
  last_status_code: Int
  last_error: String
  next_attempt_at: String
  created_at: String!
  delivered_at: String
}

type DeliveryPage {
  data: [Delivery!]!
  next_cursor: String
}

"""
A data message of a subscription, as on /v1/stream: \`record\` (connector topics, with \`record\`), \`event\`
(the runs topic, with \`event\`) or \`gap\` (\`from\`..\`to\` were too many to replay).
"""
type StreamServerMessage {
  type: StreamMessageType!
  topic: String
  seq: Int
  record: StoredRecord
  event: JSON
  from: Int
  to: Int
}

type Query {
  "A run of the caller's workspace (scope runs:read)."
  run(id: ID!): Run
  "An agent of the caller's workspace (scope agents:read)."
  agent(id: ID!): Agent
  "Agents in creation order (scope agents:read)."
  agents(${PAGE_ARGS}
  ): AgentPage
  "A task (scope tasks:read)."
  task(id: ID!): Task
  "A tool, retired ones included (scope tools:read)."
  tool(id: ID!): Tool
  "Tools in registration order (scope tools:read)."
  tools(${PAGE_ARGS}
    include_retired: Boolean
  ): ToolPage
  "A webhook subscription (scope webhooks:read)."
  webhook(id: ID!): Webhook
  "Webhook subscriptions (scope webhooks:read)."
  webhooks(${PAGE_ARGS}
  ): WebhookPage
  "A connector's records with lineage (scope records:read)."
  records(connector_id: ID!,${PAGE_ARGS}
  ): RecordPage
}

input PolicyBindingInput {
  envelope: String!
  required_scopes: [String!]!
}

input AgentCreate {
  name: String!
  behavior: AgentBehavior!
  capabilities: [String!]
  policy_envelope: String
}

input TaskAssign {
  description: String!
  data_source: String
  priority: Int
}

input ToolRegistration {
  name: String!
  provider: String!
  input_schema: JSON
  output_schema: JSON
  policy_binding: PolicyBindingInput!
  idempotent: Boolean
  config: JSON
}

input RunStartRequest {
  inputs: JSON
  mode: RunMode
  trace_level: TraceLevel
  policy_envelope: String
}

input ApprovalDecision {
  decision: ApprovalDecisionKind!
  comment: String
}

input WebhookCreate {
  url: String!
  "Each one of: ${EVENT_KINDS}."
  events: [String!]!
  secret: String!
}

type Mutation {
  "POST /v1/agents (scope agents:write)."
  createAgent(input: AgentCreate!): Agent
  "POST /v1/agents/{agent_id}/tasks (scope tasks:write)."
  assignTask(agent_id: ID!, input: TaskAssign!): Task
  "POST /v1/tools (scope tools:write)."
  registerTool(input: ToolRegistration!): Tool
  "DELETE /v1/tools/{tool_id} (scope tools:write)."
  retireTool(id: ID!): Tool
  "POST /v1/agents/{agent_id}/runs (scope runs:write)."
  startRun(agent_id: ID!, input: RunStartRequest): Run
  "POST /v1/runs/{run_id}/pause (scope runs:write)."
  pauseRun(id: ID!): Run
  "POST /v1/runs/{run_id}/resume (scope runs:write)."
  resumeRun(id: ID!): Run
  "POST /v1/runs/{run_id}/cancel (scope runs:write)."
  cancelRun(id: ID!): Run
  "POST /v1/runs/{run_id}/steps/{step_id}/approval (scope runs:approve)."
  decideApproval(run_id: ID!, step_id: String!, input: ApprovalDecision!): Run
  "POST /v1/webhooks (scope webhooks:write)."
  createWebhook(input: WebhookCreate!): Webhook
}

type Subscription {
  "The runs topic of /v1/stream (scope stream:runs); since replays what followed that seq."
  runEvents(since: Int): StreamServerMessage!
  "The connector:<id> topic of /v1/stream (scope stream:connector:<id>)."
  connectorRecords(connector_id: ID!, since: Int): StreamServerMessage!
}
`
