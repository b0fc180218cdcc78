export interface EventRow {
  seq: number
  id: string
  workspaceId: string
  kind: string
  ts: number
  subjectId: string
  data: Record<string, unknown>
}
