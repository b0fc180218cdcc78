import type { ApiKeyRecord, Workspace } from '../identity.js'
import type { TxBound } from '../ports.js'

export interface WorkspaceRepository extends TxBound<WorkspaceRepository> {
  byId(id: string): Promise<Workspace | undefined>
  byName(name: string): Promise<Workspace | undefined>
  /** Inserts unless the name exists (two CLI calls may race); returns the stored workspace either way. */
  insertIfAbsent(ws: Workspace): Promise<Workspace>
  update(ws: Workspace): Promise<void>
}

export interface KeyRepository extends TxBound<KeyRepository> {
  insert(key: ApiKeyRecord): Promise<void>
  byId(id: string): Promise<ApiKeyRecord | undefined>
  listByWorkspace(workspaceId: string): Promise<ApiKeyRecord[]>
  revoke(id: string, at: number): Promise<boolean>
}
