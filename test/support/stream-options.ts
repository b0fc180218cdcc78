import { loadConfig } from '../../src/config.js'
import type { StreamOptions } from '../../src/stream/hub.js'
import { MAX_REPLAY } from '../../src/surface/topic-sources.js'

const defaults = loadConfig({})

/** A hub's options as a server with default settings runs it (the defaults live in src/config.ts only). */
export const STREAM_OPTIONS: StreamOptions = {
  heartbeatMs: defaults.streamHeartbeatMs,
  maxBufferedBytes: defaults.streamMaxBufferedBytes,
  fallbackPollMs: defaults.streamFallbackPollMs,
  maxReplay: MAX_REPLAY,
}
