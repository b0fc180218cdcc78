import { loadConfig } from '../../src/config.js'
import { CONSOLE_FAILURE_LOG } from '../../src/domain/failure-log.js'
import type { KeyTopics, StreamIngestor, StreamOptions } from '../../src/stream/hub.js'
import { MAX_REPLAY } from '../../src/surface/topic-sources.js'

const defaults = loadConfig({})

/** A hub's options as a server with default settings runs it (the defaults live in src/config.ts only). */
export const STREAM_OPTIONS: StreamOptions = {
  heartbeatMs: defaults.streamHeartbeatMs,
  maxBufferedBytes: defaults.streamMaxBufferedBytes,
  fallbackPollMs: defaults.streamFallbackPollMs,
  maxReplay: MAX_REPLAY,
  log: CONSOLE_FAILURE_LOG,
}

/** A key whose topics are not bounded across its connections: every topic asked for is granted. */
export const UNBOUNDED_KEY_TOPICS: KeyTopics = {
  take: async (wanted) => ({ granted: wanted }),
  release: async () => {},
}

/** The ingestor of a hub whose test sends no batch: one that arrives fails loudly. */
export const NO_INGESTION: StreamIngestor = async () => {
  throw new Error('this test sends no batch over the stream')
}
