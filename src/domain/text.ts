/**
 * Text the stores cannot keep faithfully, refused at every entrance (HTTP path, query, headers and body; stream
 * messages; any other surface) before it reaches a store:
 * - U+0000: PostgreSQL text cannot hold it (SQLite can), so accepting it would make the stores disagree;
 * - a lone UTF-16 surrogate: UTF-8 cannot encode it, and encoding silently replaces it with U+FFFD (data loss).
 * Other control characters (U+0001–U+001F, U+007F–U+009F) are stored and returned exactly as sent: both stores
 * keep them and JSON escapes them, so refusing them would only narrow what clients may say.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching U+0000 is the point of this rule
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

export interface UnstorableText {
  /** Dotted path of the offending value (or key) inside the checked value; '' for the value itself. */
  path: string
  message: string
}

/** Why this string cannot be stored, or undefined when it can. */
export function unstorableReason(text: string): string | undefined {
  const match = UNSTORABLE.exec(text)
  if (!match) return undefined
  return match[0] === '\u0000'
    ? 'contains U+0000 (NUL), which cannot be stored'
    : 'contains a lone UTF-16 surrogate, which is not valid Unicode text'
}

/** The first string (value or object key) in a parsed JSON value that cannot be stored, depth first. */
export function findUnstorableText(value: unknown, path = ''): UnstorableText | undefined {
  if (typeof value === 'string') {
    const reason = unstorableReason(value)
    return reason ? { path, message: `The value ${reason}` } : undefined
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], path ? `${path}.${i}` : String(i))
      if (found) return found
    }
    return undefined
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      const keyPath = path ? `${path}.${key}` : key
      const keyReason = unstorableReason(key)
      if (keyReason) return { path: keyPath, message: `The property name ${keyReason}` }
      const found = findUnstorableText(inner, keyPath)
      if (found) return found
    }
  }
  return undefined
}
