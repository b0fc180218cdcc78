import type { AuthContext } from './caller.js'

/** Hono's typed context for every HTTP route and middleware, REST and GraphQL alike. */
export interface AppEnv {
  Variables: {
    requestId: string
    auth: AuthContext
    /** The spec §7 code of the error this request is answered with (set by errorResponse; read by the observer). */
    errorCode: string
  }
}
