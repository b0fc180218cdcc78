/**
 * RFC 8785 JSON Canonicalization Scheme for values that came from JSON.parse: object keys sorted by UTF-16
 * code units, no whitespace, numbers in ECMAScript shortest form (what JSON.stringify already emits), strings
 * escaped as JSON.stringify escapes them (which matches RFC 8785 §3.2.2.2).
 * Built by plain string concatenation: it runs once per ingested record, where intermediate arrays
 * (entries, filter, map, join) were most of its cost.
 */
export function canonicalize(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('RFC 8785 cannot represent NaN or Infinity')
      return JSON.stringify(value)
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i]
          out += `${i === 0 ? '' : ','}${item === undefined ? 'null' : canonicalize(item)}`
        }
        return `${out}]`
      }
      const object = value as Record<string, unknown>
      // Default sort compares UTF-16 code units, exactly what RFC 8785 §3.2.3 asks for.
      const keys = Object.keys(object).sort()
      let out = '{'
      for (const key of keys) {
        const item = object[key]
        if (item === undefined) continue
        out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalize(item)}`
      }
      return `${out}}`
    }
    default:
      throw new TypeError(`cannot canonicalize a ${typeof value}`)
  }
}
