export interface PolicyBinding {
  envelope: string
  required_scopes: string[]
}

export interface ToolRecord {
  seq: number
  id: string
  workspaceId: string
  name: string
  provider: string
  inputSchema: Record<string, unknown>
  outputSchema: Record<string, unknown>
  policyBinding: PolicyBinding
  idempotent: boolean
  config: Record<string, unknown>
  status: 'active' | 'retired'
  createdAt: number
  retiredAt: number | null
}

/** A tool as registered: active, so its status and retirement are the store's to set, not the caller's. */
export type NewTool = Omit<ToolRecord, 'seq' | 'status' | 'retiredAt'>
