import { ApiError } from './errors.js'

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

/**
 * The first string (value or object key) in a parsed JSON value that cannot be stored (depth first).
 * Iterative, so a deeply nested body cannot exhaust the call stack.
 */
export function findUnstorableText(value: unknown, path = ''): UnstorableText | undefined {
  // Nearly every value holds nothing unstorable: look without building a path per value, and name the place only
  // when there is one (a 500-record ingest body spent most of its scan on paths it never reported).
  if (!holdsUnstorableText(value)) return undefined
  const pending: { value: unknown; path: string }[] = [{ value, path }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const current = next.value
    if (typeof current === 'string') {
      const reason = unstorableReason(current)
      if (reason) return { path: next.path, message: `The value ${reason}` }
    } else if (typeof current === 'object' && current !== null) {
      const children: { value: unknown; path: string }[] = []
      for (const [key, inner] of Object.entries(current)) {
        const keyPath = next.path ? `${next.path}.${key}` : key
        if (!Array.isArray(current)) {
          const keyReason = unstorableReason(key)
          if (keyReason) return { path: keyPath, message: `The property name ${keyReason}` }
        }
        children.push({ value: inner, path: keyPath })
      }
      // Reversed onto the stack, so the first child is looked at first.
      for (let i = children.length - 1; i >= 0; i--)
        pending.push(children[i] as { value: unknown; path: string })
    }
  }
  return undefined
}

/** Whether any string or object key inside a JSON value is unstorable; the same values the search below visits. */
function holdsUnstorableText(root: unknown): boolean {
  const pending: unknown[] = [root]
  for (let i = 0; i < pending.length; i++) {
    const current = pending[i]
    if (typeof current === 'string') {
      if (UNSTORABLE.test(current)) return true
    } else if (Array.isArray(current)) {
      for (const item of current) pending.push(item)
    } else if (typeof current === 'object' && current !== null) {
      const object = current as Record<string, unknown>
      for (const key of Object.keys(object)) {
        if (UNSTORABLE.test(key)) return true
        pending.push(object[key])
      }
    }
  }
  return false
}

/** The 400 for text no store can keep (src/domain/text.ts), naming where it was, like a schema failure. */
export function unstorableTextError(location: string, found: UnstorableText): ApiError {
  const field = found.path || '(root)'
  return new ApiError('invalid_request', `The request ${location} is invalid: ${field}: ${found.message}`, {
    issues: [{ location, path: found.path, message: found.message }],
    fields: [field],
  })
}
