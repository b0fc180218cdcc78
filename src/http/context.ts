import type { Workspace } from '../domain/identity.js'

/** What the auth middleware learned about the caller; absent only on public routes. */
export interface AuthContext {
  workspaceId: string
  keyId: string
  identity: string
  scopes: string[]
  workspace: Workspace
}

/** Hono's typed context for every route and middleware of the reference server. */
export interface AppEnv {
  Variables: {
    requestId: string
    auth: AuthContext
    /** The spec §7 code of the error this request is answered with (set by errorResponse; read by metrics). */
    errorCode: string
  }
}
