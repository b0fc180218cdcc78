/**
 * The reference's GraphQL surface beyond the first reads (spec §4 "A GraphQL surface is mentioned; its shape is not
 * shown", so every check here is profile): GraphQL over HTTP's GET and its refusals, the document limits, the
 * resources and mutations that mirror REST operations, the records query, and graphql-ws's authentication and
 * subscriptions. Each judges the reference's own answers; another deployment's GraphQL surface may differ in all of it.
 */
import type { Check } from '../../check.js'
import { wsAuthentication, wsKeyQuotas, wsRateLimited } from './admission.js'
import { documentLimits, httpRequestForms, introspectionCost } from './documents.js'
import {
  idempotencyKeysMutationsOnly,
  recordsAndSchema,
  runMutations,
  toolsAndTasks,
  webhooksAndDestinations,
} from './resources.js'
import { fieldScopes, schemaDocumentsScopes } from './scopes.js'
import { wsResumePointsApart, wsSubscriptions } from './subscriptions.js'

export { type GqlSocket, openGql } from './socket.js'

/** In the order they run: the subscriptions first, as they wait on the deployment's pushes alongside the rest. */
export const graphqlSurfaceChecks: Check[] = [
  wsSubscriptions,
  wsResumePointsApart,
  httpRequestForms,
  documentLimits,
  toolsAndTasks,
  webhooksAndDestinations,
  runMutations,
  wsKeyQuotas,
  wsRateLimited,
  wsAuthentication,
  recordsAndSchema,
  schemaDocumentsScopes,
  idempotencyKeysMutationsOnly,
  fieldScopes,
  introspectionCost,
]
