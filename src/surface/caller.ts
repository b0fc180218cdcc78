import type { Workspace } from '../domain/identity.js'
import type { VerifiedKey } from '../domain/keys/service.js'

/** Who is calling: what a verified key says about its holder. Every transport builds it with `callerFromKey`. */
export interface AuthContext {
  workspaceId: string
  keyId: string
  identity: string
  scopes: string[]
  workspace: Workspace
}

/** The one step from a verified key to the caller, shared by REST, GraphQL (HTTP and graphql-ws) and the stream. */
export function callerFromKey(verified: VerifiedKey): AuthContext {
  return {
    workspaceId: verified.workspace.id,
    keyId: verified.keyId,
    identity: verified.identity,
    scopes: verified.scopes,
    workspace: verified.workspace,
  }
}

/** The part of the caller a run or task records (who started it, with which scopes); never the workspace. */
export function callerOf(auth: AuthContext): { keyId: string; identity: string; scopes: string[] } {
  return { keyId: auth.keyId, identity: auth.identity, scopes: auth.scopes }
}
