/**
 * The hand-written part of the GraphQL schema: the relations (fields that follow a reference instead of mirroring a
 * contract property), the subscription message and the root types. Every object type, input type and enum of the
 * contract is generated from its `components.schemas` (generated/graphql.ts, `npm run generate`); the two are one
 * schema (src/graphql/schema.ts), printed to openapi/agent-operations.graphql by `npm run graphql:schema`.
 */
import { OPERATION_SCOPES } from '../../generated/contract.js'
import type { ScopedOperation } from '../surface/scopes.js'

/** The scope of the REST operation a root field mirrors, as the contract names it. */
const scopeOf = (operation: ScopedOperation) => OPERATION_SCOPES[operation]

const PAGE_ARGS = `
    "Opaque cursor from the previous page's next_cursor."
    cursor: String
    "Items per page, 1 to 200 (default 50)."
    limit: Int`

/** GraphQL-only fields that follow a reference, added to the generated types. */
export const RELATIONS_SDL = /* GraphQL */ `
extend type Run {
  "The owning agent (null once it was deleted)."
  agent: Agent
  "A page of the run's trace, like GET /v1/runs/{run_id}/trace."
  trace(${PAGE_ARGS}
  ): TracePage!
}

extend type Agent {
  "The agent's runs, oldest first, like GET /v1/agents/{agent_id}/runs."
  runs(${PAGE_ARGS}
  ): RunPage!
}

extend type Task {
  "The agent the task was assigned to (null once it was deleted)."
  agent: Agent
  "The run carrying the task."
  run: Run
}

extend type StreamServerMessage {
  "The runs topic's event, typed: its shared fields, and the others per kind (\`... on RunLifecycleEvent { status }\`)."
  run_event: RunEvent
}

extend type Webhook {
  "Delivery attempts of this subscription, like GET /v1/webhooks/{webhook_id}/deliveries."
  deliveries(${PAGE_ARGS}
  ): DeliveryPage!
}

extend type Destination {
  "Delivery attempts to this destination, like GET /v1/destinations/{destination_id}/deliveries."
  deliveries(${PAGE_ARGS}
  ): DestinationDeliveryPage!
}
`

export const SDL = /* GraphQL */ `
${RELATIONS_SDL}
"The data messages of /v1/stream that subscriptions carry."
enum StreamMessageType { record event gap }

"""
A data message of a subscription, as on /v1/stream: \`record\` (connector topics, with \`record\`), \`event\`
(the runs topic, with \`event\` and, typed, \`run_event\`) or \`gap\` (\`from\`..\`to\` were too many to replay).
"""
type StreamServerMessage {
  type: StreamMessageType!
  topic: String
  seq: Int
  record: StoredRecord
  "The event as JSON, whole (\`run_event\` is the same event, typed)."
  event: JSON
  from: Int
  to: Int
}

type Query {
  "A run of the caller's workspace (scope ${scopeOf('getRun')})."
  run(id: ID!): Run
  "An agent of the caller's workspace (scope ${scopeOf('getAgent')})."
  agent(id: ID!): Agent
  "Agents in creation order (scope ${scopeOf('listAgents')})."
  agents(${PAGE_ARGS}
  ): AgentPage
  "A task (scope ${scopeOf('getTask')})."
  task(id: ID!): Task
  "A tool, retired ones included (scope ${scopeOf('getTool')})."
  tool(id: ID!): Tool
  "Tools in registration order (scope ${scopeOf('listTools')})."
  tools(${PAGE_ARGS}
    include_retired: Boolean
  ): ToolPage
  "A webhook subscription (scope ${scopeOf('getWebhook')})."
  webhook(id: ID!): Webhook
  "Webhook subscriptions (scope ${scopeOf('listWebhooks')})."
  webhooks(${PAGE_ARGS}
  ): WebhookPage
  "A destination (scope ${scopeOf('getDestination')})."
  destination(id: ID!): Destination
  "Destinations of the workspace (scope ${scopeOf('listDestinations')})."
  destinations(${PAGE_ARGS}
  ): DestinationPage
  "A connector's records with lineage (scope ${scopeOf('listConnectorRecords')})."
  records(connector_id: ID!,${PAGE_ARGS}
  ): RecordPage
}

type Mutation {
  "POST /v1/agents (scope ${scopeOf('createAgent')})."
  createAgent(input: AgentCreate!): Agent
  "POST /v1/agents/{agent_id}/tasks (scope ${scopeOf('assignTask')})."
  assignTask(agent_id: ID!, input: TaskAssign!): Task
  "POST /v1/tools (scope ${scopeOf('registerTool')})."
  registerTool(input: ToolRegistration!): Tool
  "DELETE /v1/tools/{tool_id} (scope ${scopeOf('retireTool')})."
  retireTool(id: ID!): Tool
  "POST /v1/agents/{agent_id}/runs (scope ${scopeOf('startRun')})."
  startRun(agent_id: ID!, input: RunStartRequest): Run
  "POST /v1/runs/{run_id}/pause (scope ${scopeOf('pauseRun')})."
  pauseRun(id: ID!): Run
  "POST /v1/runs/{run_id}/resume (scope ${scopeOf('resumeRun')})."
  resumeRun(id: ID!): Run
  "POST /v1/runs/{run_id}/cancel (scope ${scopeOf('cancelRun')})."
  cancelRun(id: ID!): Run
  "POST /v1/runs/{run_id}/steps/{step_id}/approval (scope ${scopeOf('decideApproval')})."
  decideApproval(run_id: ID!, step_id: String!, input: ApprovalDecision!): Run
  "POST /v1/webhooks (scope ${scopeOf('createWebhook')})."
  createWebhook(input: WebhookCreate!): Webhook
  "POST /v1/destinations (scope ${scopeOf('createDestination')})."
  createDestination(input: DestinationCreate!): Destination
  "PATCH /v1/destinations/{destination_id} (scope ${scopeOf('updateDestination')})."
  updateDestination(id: ID!, input: DestinationUpdate!): Destination
  "DELETE /v1/destinations/{destination_id} (scope ${scopeOf('deleteDestination')}); true once deleted."
  deleteDestination(id: ID!): Boolean
  "POST /v1/destinations/{destination_id}/test (scope ${scopeOf('testDestination')})."
  testDestination(id: ID!, event: String): DestinationTestResult
}

type Subscription {
  "The runs topic of /v1/stream (scope stream:runs); since replays what followed that seq."
  runEvents(since: Int): StreamServerMessage!
  "The connector:<id> topic of /v1/stream (scope stream:connector:<id>)."
  connectorRecords(connector_id: ID!, since: Int): StreamServerMessage!
}
`
