/**
 * The resource namespaces (`ops.runs.get(id)`, `ops.tools.list()`…): each method takes the ids, the body and
 * request options, resolves to the response body itself, and every list returns a `List` (await it for a page,
 * `for await` it for every item). Parameter and result types come from the generated contract types, so they follow
 * the contract; the calls go through the generated SDK and therefore through the client's transport.
 */
import type { Client } from '../generated/client/index.js'
import type { AgentOpsApi } from '../generated/sdk.gen.js'
import type {
  AssignTaskData,
  AssignTaskResponse,
  CancelRunResponse,
  CreateAgentData,
  CreateAgentResponse,
  CreateDestinationData,
  CreateDestinationResponse,
  CreateWebhookData,
  CreateWebhookResponse,
  DecideApprovalData,
  DecideApprovalResponse,
  GetAgentResponse,
  GetDestinationResponse,
  GetHealthResponse,
  GetRunResponse,
  GetRunTraceData,
  GetRunTraceResponse,
  GetTaskResponse,
  GetToolResponse,
  GetWebhookResponse,
  IngestBatchData,
  IngestBatchResponse,
  ListAgentRunsData,
  ListAgentRunsResponse,
  ListAgentsData,
  ListAgentsResponse,
  ListConnectorRecordsData,
  ListConnectorRecordsResponse,
  ListDestinationDeliveriesData,
  ListDestinationDeliveriesResponse,
  ListDestinationsData,
  ListDestinationsResponse,
  ListToolsData,
  ListToolsResponse,
  ListWebhookDeliveriesData,
  ListWebhookDeliveriesResponse,
  ListWebhooksData,
  ListWebhooksResponse,
  PauseRunResponse,
  PostGraphqlData,
  PostGraphqlResponse,
  RedeliverDestinationDeliveryResponse,
  RedeliverWebhookDeliveryResponse,
  RegisterToolData,
  RegisterToolResponse,
  ResumeRunResponse,
  RetireToolResponse,
  RotateWebhookSecretData,
  RotateWebhookSecretResponse,
  Run,
  StartRunData,
  StartRunResponse,
  TestDestinationData,
  TestDestinationResponse,
  TraceFrame,
  UpdateDestinationData,
  UpdateDestinationResponse,
} from '../generated/types.gen.js'
import { List, type Page } from './list.js'
import { type FollowOptions, followTrace, type WaitOptions, waitForRun } from './runs.js'
import { constructEvent, type HeadersLike, type VerifyWebhookOptions, type WebhookEvent } from './webhooks.js'

/** Per-call settings, the same for every method. */
export interface RequestOptions {
  /** Abort the call (composed with the time-out). */
  signal?: AbortSignal
  /** Milliseconds for this call, retries included; overrides the client's `timeout`. `0` means none. */
  timeout?: number
  /** The POST's `Idempotency-Key` (default: a random one, the same on every retry of this call). */
  idempotencyKey?: string
  /** Extra request headers. */
  headers?: Record<string, string>
}

/** A list's query: `limit` per page, and `cursor` to start from a page other than the first. */
type QueryOf<D> = D extends { query?: infer Q } ? Exclude<Q, undefined> : never
/** A request body as the contract types it. */
type BodyOf<D> = D extends { body: infer B } ? B : never

export type ListRunsParams = { agent_id: string } & QueryOf<ListAgentRunsData>
export type ListParams = QueryOf<ListToolsData>
export type TraceParams = QueryOf<GetRunTraceData>

/** What the SDK methods take besides ids, query and body: what `RequestOptions` turns into. */
interface Wire {
  signal?: AbortSignal
  headers?: Record<string, string>
  meta?: { timeout: number }
}

export function wire(options: RequestOptions = {}): Wire {
  const headers = { ...options.headers }
  if (options.idempotencyKey !== undefined) headers['Idempotency-Key'] = options.idempotencyKey
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(options.timeout !== undefined ? { meta: { timeout: options.timeout } } : {}),
  }
}

/** The body of an SDK call (which resolves to `{ data, request, response }`, throwing on any non-2xx). */
async function body<R>(pending: Promise<{ data: R }>): Promise<R> {
  return (await pending).data
}

/** A `List` over a paged operation; `params.cursor` (when given) is where it starts. */
function list<T, P extends { cursor?: string; limit?: number }>(
  params: P | undefined,
  fetchPage: (query: { cursor?: string; limit?: number }) => Promise<Page<T>>,
  stop: 'cursor' | 'cursor-or-empty' = 'cursor',
): List<T> {
  const limit = params?.limit
  return new List<T>(
    (cursor) =>
      fetchPage({ ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) }),
    params?.cursor,
    stop,
  )
}

export class Agents {
  constructor(private readonly api: AgentOpsApi) {}
  create(agent: BodyOf<CreateAgentData>, options?: RequestOptions): Promise<CreateAgentResponse> {
    return body(this.api.createAgent({ body: agent, ...wire(options) }))
  }
  get(agentId: string, options?: RequestOptions): Promise<GetAgentResponse> {
    return body(this.api.getAgent({ path: { agent_id: agentId }, ...wire(options) }))
  }
  /** Deletes the agent (204: resolves to nothing). */
  async delete(agentId: string, options?: RequestOptions): Promise<void> {
    await this.api.deleteAgent({ path: { agent_id: agentId }, ...wire(options) })
  }
  list(params?: QueryOf<ListAgentsData>, options?: RequestOptions): List<ListAgentsResponse['data'][number]> {
    return list(params, (query) => body(this.api.listAgents({ query, ...wire(options) })))
  }
}

export class Runs {
  constructor(
    private readonly api: AgentOpsApi,
    private readonly http: Client,
  ) {}
  /** Queues a run of the agent (`body` defaults to `{}`). */
  start(
    agentId: string,
    run: BodyOf<StartRunData> = {},
    options?: RequestOptions,
  ): Promise<StartRunResponse> {
    return body(this.api.startRun({ path: { agent_id: agentId }, body: run, ...wire(options) }))
  }
  get(runId: string, options?: RequestOptions): Promise<GetRunResponse> {
    return body(this.api.getRun({ path: { run_id: runId }, ...wire(options) }))
  }
  /** An agent's runs, in creation order. */
  list(params: ListRunsParams, options?: RequestOptions): List<ListAgentRunsResponse['data'][number]> {
    const { agent_id, ...query } = params
    return list(query, (q) =>
      body(this.api.listAgentRuns({ path: { agent_id }, query: q, ...wire(options) })),
    )
  }
  pause(runId: string, options?: RequestOptions): Promise<PauseRunResponse> {
    return body(this.api.pauseRun({ path: { run_id: runId }, ...wire(options) }))
  }
  resume(runId: string, options?: RequestOptions): Promise<ResumeRunResponse> {
    return body(this.api.resumeRun({ path: { run_id: runId }, ...wire(options) }))
  }
  cancel(runId: string, options?: RequestOptions): Promise<CancelRunResponse> {
    return body(this.api.cancelRun({ path: { run_id: runId }, ...wire(options) }))
  }
  /** Approves or rejects a step that awaits approval. */
  decide(
    runId: string,
    stepId: string,
    decision: BodyOf<DecideApprovalData>,
    options?: RequestOptions,
  ): Promise<DecideApprovalResponse> {
    return body(
      this.api.decideApproval({ path: { run_id: runId, step_id: stepId }, body: decision, ...wire(options) }),
    )
  }
  /** The frames written so far, paged (a live run's trace ends at its first empty page; `follow` waits instead). */
  trace(runId: string, params?: TraceParams, options?: RequestOptions): List<TraceFrame> {
    return list(
      params,
      (query): Promise<GetRunTraceResponse> =>
        body(this.api.getRunTrace({ path: { run_id: runId }, query, ...wire(options) })),
      'cursor-or-empty',
    )
  }
  /** Every frame, then live ones until the run is terminal (SSE, resumed on reconnect). */
  follow(runId: string, options?: FollowOptions): AsyncGenerator<TraceFrame, void, undefined> {
    return followTrace(this.http, runId, options)
  }
  /** Polls the run until its status is terminal (`x-run-state-machine`) and returns it. */
  wait(runId: string, options?: WaitOptions): Promise<Run> {
    return waitForRun(this.api, runId, options)
  }
}

export class Tools {
  constructor(private readonly api: AgentOpsApi) {}
  register(tool: BodyOf<RegisterToolData>, options?: RequestOptions): Promise<RegisterToolResponse> {
    return body(this.api.registerTool({ body: tool, ...wire(options) }))
  }
  get(toolId: string, options?: RequestOptions): Promise<GetToolResponse> {
    return body(this.api.getTool({ path: { tool_id: toolId }, ...wire(options) }))
  }
  retire(toolId: string, options?: RequestOptions): Promise<RetireToolResponse> {
    return body(this.api.retireTool({ path: { tool_id: toolId }, ...wire(options) }))
  }
  list(params?: ListParams, options?: RequestOptions): List<ListToolsResponse['data'][number]> {
    return list(params, (query) => body(this.api.listTools({ query, ...wire(options) })))
  }
}

export class Tasks {
  constructor(private readonly api: AgentOpsApi) {}
  /** Assigns a task to the agent, which starts a run for it. */
  assign(
    agentId: string,
    task: BodyOf<AssignTaskData>,
    options?: RequestOptions,
  ): Promise<AssignTaskResponse> {
    return body(this.api.assignTask({ path: { agent_id: agentId }, body: task, ...wire(options) }))
  }
  get(taskId: string, options?: RequestOptions): Promise<GetTaskResponse> {
    return body(this.api.getTask({ path: { task_id: taskId }, ...wire(options) }))
  }
}

export class Webhooks {
  constructor(private readonly api: AgentOpsApi) {}
  create(webhook: BodyOf<CreateWebhookData>, options?: RequestOptions): Promise<CreateWebhookResponse> {
    return body(this.api.createWebhook({ body: webhook, ...wire(options) }))
  }
  get(webhookId: string, options?: RequestOptions): Promise<GetWebhookResponse> {
    return body(this.api.getWebhook({ path: { webhook_id: webhookId }, ...wire(options) }))
  }
  /** Deletes the subscription (204: resolves to nothing). */
  async delete(webhookId: string, options?: RequestOptions): Promise<void> {
    await this.api.deleteWebhook({ path: { webhook_id: webhookId }, ...wire(options) })
  }
  list(
    params?: QueryOf<ListWebhooksData>,
    options?: RequestOptions,
  ): List<ListWebhooksResponse['data'][number]> {
    return list(params, (query) => body(this.api.listWebhooks({ query, ...wire(options) })))
  }
  rotateSecret(
    webhookId: string,
    rotation: BodyOf<RotateWebhookSecretData>,
    options?: RequestOptions,
  ): Promise<RotateWebhookSecretResponse> {
    return body(
      this.api.rotateWebhookSecret({ path: { webhook_id: webhookId }, body: rotation, ...wire(options) }),
    )
  }
  deliveries(
    webhookId: string,
    params?: QueryOf<ListWebhookDeliveriesData>,
    options?: RequestOptions,
  ): List<ListWebhookDeliveriesResponse['data'][number]> {
    return list(params, (query) =>
      body(this.api.listWebhookDeliveries({ path: { webhook_id: webhookId }, query, ...wire(options) })),
    )
  }
  redeliver(
    webhookId: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<RedeliverWebhookDeliveryResponse> {
    return body(
      this.api.redeliverWebhookDelivery({
        path: { webhook_id: webhookId, delivery_id: deliveryId },
        ...wire(options),
      }),
    )
  }
  /** `constructEvent(body, headers, secrets)`: the verified, typed event, or a `WebhookVerificationError`. */
  constructEvent(
    rawBody: string | Uint8Array,
    headers: HeadersLike,
    secrets: string | readonly string[],
    options?: VerifyWebhookOptions,
  ): WebhookEvent {
    return constructEvent(rawBody, headers, secrets, options)
  }
}

/** Chat, paging and downstream destinations (docs/events.md); their secrets go in, never come back. */
export class Destinations {
  constructor(private readonly api: AgentOpsApi) {}
  create(
    destination: BodyOf<CreateDestinationData>,
    options?: RequestOptions,
  ): Promise<CreateDestinationResponse> {
    return body(this.api.createDestination({ body: destination, ...wire(options) }))
  }
  get(destinationId: string, options?: RequestOptions): Promise<GetDestinationResponse> {
    return body(this.api.getDestination({ path: { destination_id: destinationId }, ...wire(options) }))
  }
  update(
    destinationId: string,
    changes: BodyOf<UpdateDestinationData>,
    options?: RequestOptions,
  ): Promise<UpdateDestinationResponse> {
    return body(
      this.api.updateDestination({
        path: { destination_id: destinationId },
        body: changes,
        ...wire(options),
      }),
    )
  }
  /** Deletes the destination (204: resolves to nothing). */
  async delete(destinationId: string, options?: RequestOptions): Promise<void> {
    await this.api.deleteDestination({ path: { destination_id: destinationId }, ...wire(options) })
  }
  list(
    params?: QueryOf<ListDestinationsData>,
    options?: RequestOptions,
  ): List<ListDestinationsResponse['data'][number]> {
    return list(params, (query) => body(this.api.listDestinations({ query, ...wire(options) })))
  }
  /** Sends a made-up event now and resolves to what the receiver answered. */
  test(
    destinationId: string,
    sample: NonNullable<TestDestinationData['body']> = {},
    options?: RequestOptions,
  ): Promise<TestDestinationResponse> {
    return body(
      this.api.testDestination({ path: { destination_id: destinationId }, body: sample, ...wire(options) }),
    )
  }
  deliveries(
    destinationId: string,
    params?: QueryOf<ListDestinationDeliveriesData>,
    options?: RequestOptions,
  ): List<ListDestinationDeliveriesResponse['data'][number]> {
    return list(params, (query) =>
      body(
        this.api.listDestinationDeliveries({
          path: { destination_id: destinationId },
          query,
          ...wire(options),
        }),
      ),
    )
  }
  redeliver(
    destinationId: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<RedeliverDestinationDeliveryResponse> {
    return body(
      this.api.redeliverDestinationDelivery({
        path: { destination_id: destinationId, delivery_id: deliveryId },
        ...wire(options),
      }),
    )
  }
}

export class Ingest {
  constructor(private readonly api: AgentOpsApi) {}
  /** Sends a batch of records to a connector. */
  batch(
    connectorId: string,
    batch: BodyOf<IngestBatchData>,
    options?: RequestOptions,
  ): Promise<IngestBatchResponse> {
    return body(this.api.ingestBatch({ path: { connector_id: connectorId }, body: batch, ...wire(options) }))
  }
  /** A connector's accepted records, in order. */
  records(
    connectorId: string,
    params?: QueryOf<ListConnectorRecordsData>,
    options?: RequestOptions,
  ): List<ListConnectorRecordsResponse['data'][number]> {
    return list(params, (query) =>
      body(this.api.listConnectorRecords({ path: { connector_id: connectorId }, query, ...wire(options) })),
    )
  }
}

/** `ops.graphql(request)`: one GraphQL operation over POST; `data` and `errors` as the server answers them. */
export function graphql(
  api: AgentOpsApi,
  request: BodyOf<PostGraphqlData>,
  options?: RequestOptions,
): Promise<PostGraphqlResponse> {
  return body(api.postGraphql({ body: request, ...wire(options) }))
}

/** `ops.health()`: the server and its store answer. */
export function health(api: AgentOpsApi, options?: RequestOptions): Promise<GetHealthResponse> {
  return body(api.getHealth(wire(options)))
}
