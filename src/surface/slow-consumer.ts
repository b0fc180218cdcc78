/**
 * The slow-consumer rule of both WebSocket transports (/v1/stream and graphql-ws on /v1/graphql). Both write to a
 * socket without waiting for its peer, so a peer that stops reading would have the server buffer without bound;
 * once more than the operator's bound (`AGENTOPS_STREAM_MAX_BUFFERED_BYTES`) waits unsent, the socket is closed
 * with 4008 instead, and counted in `agentops_socket_slow_consumer_closes_total`.
 */
import type { SocketTelemetry } from './socket-telemetry.js'

export const CLOSE_SLOW_CONSUMER = 4008
export const SLOW_CONSUMER_REASON = 'slow consumer'

/**
 * Checked before each message: true when the peer already leaves more than `maxBufferedBytes` unsent. The close is
 * counted here, so no transport can close without counting; the caller then closes the socket with
 * CLOSE_SLOW_CONSUMER and SLOW_CONSUMER_REASON and writes nothing more to it.
 */
export function countSlowConsumer(
  socket: { readonly bufferedAmount: number },
  maxBufferedBytes: number,
  telemetry: Pick<SocketTelemetry, 'slowConsumerClosed'> | undefined,
): boolean {
  if (socket.bufferedAmount <= maxBufferedBytes) return false
  telemetry?.slowConsumerClosed()
  return true
}
