export type Behavior = 'autonomous' | 'supervised' | 'hybrid'

export interface AgentRecord {
  seq: number
  id: string
  workspaceId: string
  name: string
  behavior: Behavior
  capabilities: string[]
  policyEnvelope: string
  createdAt: number
  updatedAt: number
}
