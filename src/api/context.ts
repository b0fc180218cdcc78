import type { AuthContext } from './caller.js'

/** Hono's typed context for every HTTP route and middleware, REST and GraphQL alike. */
export interface AppEnv {
  Variables: {
    requestId: string
    auth: AuthContext
  }
}
