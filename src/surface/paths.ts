/** Where the WebSocket stream is served; the HTTP app lets it through without its own auth (the upgrade checks). */
export const STREAM_PATH = '/v1/stream'
/** GraphQL over HTTP (POST, GET) and graphql-ws subscriptions (WebSocket upgrade). */
export const GRAPHQL_PATH = '/v1/graphql'
/** The printed GraphQL schema, public like /openapi.json. */
export const SCHEMA_PATH = '/schema.graphql'
