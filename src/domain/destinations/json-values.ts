/** Reading values out of JSON the service did not write (event payloads, Slack's interaction payloads). */

/** The value when it is a JSON object, else an empty one: a missing or mistyped part reads as absent fields. */
export const asObject = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}

/** The value when it is a non-empty string, else null. */
export const asText = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : null
