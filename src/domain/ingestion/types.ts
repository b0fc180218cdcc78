/** A stored ingest record with its lineage (what GET …/records and the stream present). */
export interface StoredRecordRow {
  workspaceId: string
  connectorId: string
  seq: number
  id: string
  ts: string
  source: string
  policyClass: string
  body: Record<string, unknown>
  batchId: string
  leafIndex: number
  batchSize: number
  batchRoot: string
  leafHash: string
  ingestedAt: number
}

export interface BatchRow {
  id: string
  workspaceId: string
  connectorId: string
  lineageRoot: string
  accepted: number
  rejected: number
  firstSeq: number
  createdAt: number
}
