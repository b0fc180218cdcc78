/**
 * What the GraphQL surface calls of the domain, each service narrowed to the methods its resolvers use (as the
 * stream's `StreamPorts`): a resolver that needs another method says so here, and nothing else of a service (its
 * deletes, its workers, its caches) is within reach of a resolver. The composition root (src/transports.ts) hands them in.
 */

import type { AgentService } from '../domain/agents/service.js'
import type { DestinationService } from '../domain/destinations/service.js'
import type { IngestionService } from '../domain/ingestion/service.js'
import type { RunService } from '../domain/runs/service.js'
import type { TaskService } from '../domain/tasks/service.js'
import type { ToolService } from '../domain/tools/service.js'
import type { WebhookService } from '../domain/webhooks/service.js'
import type { TopicFeeds } from '../surface/topic-feeds.js'
import type { RecordReader, RunEventReader } from '../surface/topic-sources.js'

/** The queries, mutations and relation fields (src/graphql/resolvers.ts): the REST operations they mirror. */
export interface ResolverPorts {
  agents: Pick<AgentService, 'get' | 'list' | 'create'>
  tasks: Pick<TaskService, 'get' | 'assign'>
  tools: Pick<ToolService, 'get' | 'list' | 'register' | 'retire'>
  runs: Pick<RunService, 'get' | 'start' | 'control' | 'decide' | 'frames' | 'listByAgent'>
  webhooks: Pick<WebhookService, 'get' | 'list' | 'create' | 'listDeliveries'>
  ingestion: Pick<IngestionService, 'list'>
  destinations: Pick<
    DestinationService,
    'get' | 'list' | 'create' | 'update' | 'delete' | 'test' | 'listDeliveries'
  >
}

/** The per-request agent loader (src/graphql/context.ts): a page of runs loads its agents in one call. */
export interface LoaderPorts {
  agents: Pick<AgentService, 'getMany'>
}

/** The subscriptions (src/graphql/subscriptions.ts): the stream's topic readers and shared feeds. */
export interface SubscriptionPorts {
  events: RunEventReader
  ingestion: RecordReader
  topicFeeds: Pick<TopicFeeds, 'acquire' | 'release'>
}

/** Everything GraphQL (over HTTP and graphql-ws) calls: the union of its modules' ports. */
export type GraphqlPorts = ResolverPorts & LoaderPorts & SubscriptionPorts
