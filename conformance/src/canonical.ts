/**
 * RFC 8785 (JCS) canonical JSON, written here because the suite may not import the server's code. Keys sort by
 * UTF-16 code units; numbers and strings use ECMAScript serialisation, which is what JCS prescribes.
 */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('JCS cannot encode a non-finite number')
    return JSON.stringify(value)
  }
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((v) => canonicalize(v === undefined ? null : v)).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalize(v)}`).join(',')}}`
  }
  throw new TypeError(`JCS cannot encode a ${typeof value}`)
}

/**
 * Whether two JSON values are the same value: key order carries no meaning in JSON (RFC 8259 §4), so objects whose
 * members differ only in order are equal, while array order counts. Both absent is the same; a value JCS cannot
 * encode is compared as JSON.stringify writes it.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b
  try {
    return canonicalize(a) === canonicalize(b)
  } catch {
    return JSON.stringify(a) === JSON.stringify(b)
  }
}
