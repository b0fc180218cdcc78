/** Where the WebSocket stream is served; the HTTP app lets it through without its own auth (the upgrade checks). */
export const STREAM_PATH = '/v1/stream'
