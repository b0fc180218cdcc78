import * as routes from '../../generated/routes.js'

/** A route of the contract as generated/routes.ts declares it. */
interface ContractRoute {
  operationId: string
  method: string
  path: string
}

function isContractRoute(value: unknown): value is ContractRoute {
  if (typeof value !== 'object' || value === null) return false
  const route = value as Partial<Record<keyof ContractRoute, unknown>>
  return (
    typeof route.operationId === 'string' &&
    typeof route.method === 'string' &&
    typeof route.path === 'string'
  )
}

/**
 * The request paths of the contract's POST operations named by operationId, for matching a request's path as it
 * is. An operation that is not a POST of the contract, or whose path has parameters, is refused at start-up
 * rather than never matched.
 */
export function postPathsOf(operationIds: readonly string[]): ReadonlySet<string> {
  const byId = new Map(
    Object.values(routes)
      .filter(isContractRoute)
      .map((route) => [route.operationId, route]),
  )
  return new Set(
    operationIds.map((id) => {
      const route = byId.get(id)
      if (route?.method !== 'post' || route.path.includes('{'))
        throw new Error(`${id} is not a POST of the contract without path parameters`)
      return route.path
    }),
  )
}
