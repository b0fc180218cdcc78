/**
 * What a socket transport (the stream, graphql-ws) reports for the server's metrics; src/observability's
 * SocketMetrics fits. Absent when metrics are off: then nothing is counted.
 */
export interface SocketTelemetry {
  messageSent(): void
  slowConsumerClosed(): void
  /** Where a scrape reads the live subscriptions, by topic kind or root field (set once, when the transport attaches). */
  readFrom(source: () => ReadonlyMap<string, number>): void
}
