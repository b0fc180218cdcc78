import type { ApiKeyRecord, Workspace } from '../identity.js'
import type { Queryable, TxBound } from '../ports.js'

export interface WorkspaceRepository extends TxBound<WorkspaceRepository> {
  byId(id: string): Promise<Workspace | undefined>
  /** The workspace as the unit of work `tx` sees it (a deferred unit reads nothing: then as committed). */
  byIdIn(tx: Queryable, id: string): Promise<Workspace | undefined>
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
