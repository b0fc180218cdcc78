import type { Slice } from '../pagination.js'
import type { TxBound } from '../ports.js'
import type { NewTool, ToolRecord } from './types.js'

export interface ToolRepository extends TxBound<ToolRepository> {
  /** Returns undefined when an active tool of that name exists (the unique index on active names decides). */
  insertIfNameFree(t: NewTool): Promise<ToolRecord | undefined>
  get(workspaceId: string, id: string): Promise<ToolRecord | undefined>
  activeByName(workspaceId: string, name: string): Promise<ToolRecord | undefined>
  list(
    workspaceId: string,
    includeRetired: boolean,
    afterSeq: number,
    limit: number,
  ): Promise<Slice<ToolRecord>>
  retire(workspaceId: string, id: string, at: number): Promise<boolean>
}
