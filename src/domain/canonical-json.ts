/**
 * RFC 8785 JSON Canonicalization Scheme for values that came from JSON.parse: object keys sorted by UTF-16
 * code units, no whitespace, numbers in ECMAScript shortest form (what JSON.stringify already emits), strings
 * escaped as JSON.stringify escapes them (which matches RFC 8785 §3.2.2.2).
 */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value === 'boolean') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('RFC 8785 cannot represent NaN or Infinity')
    return JSON.stringify(value)
  }
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((v) => canonicalize(v === undefined ? null : v)).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      // Default sort compares UTF-16 code units, exactly what RFC 8785 §3.2.3 asks for.
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalize(v)}`).join(',')}}`
  }
  throw new TypeError(`cannot canonicalize a ${typeof value}`)
}
