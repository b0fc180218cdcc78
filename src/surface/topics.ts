import { isConnectorId } from '../domain/ingestion/validation.js'

/** A stream topic and the key scope it needs. */
export type Topic =
  | { kind: 'connector'; name: string; connectorId: string; scope: string }
  | { kind: 'runs'; name: 'runs'; scope: 'stream:runs' }

/** The workspace's run events. */
export const RUNS_TOPIC: Topic = { kind: 'runs', name: 'runs', scope: 'stream:runs' }

export function parseTopic(name: string): Topic | undefined {
  if (name === 'runs') return RUNS_TOPIC
  if (name.startsWith('connector:')) {
    const connectorId = name.slice('connector:'.length)
    if (!isConnectorId(connectorId)) return undefined
    return { kind: 'connector', name, connectorId, scope: `stream:connector:${connectorId}` }
  }
  return undefined
}
