/**
 * How both WebSocket transports (/v1/stream and graphql-ws on /v1/graphql) close a socket whose slot among its
 * key's (`stream_sockets_per_key`, src/domain/quotas/stream-sockets.ts) lapsed while it lived: its server could not
 * renew the lease for a whole lease, so it no longer counts and another replica may have given the slot away.
 * 1013 is "try again later" (RFC 6455 §7.4.1): a reconnect is counted anew.
 */
export const CLOSE_SLOT_LAPSED = 1013
export const SLOT_LAPSED_REASON = 'connection no longer counted; reconnect'
