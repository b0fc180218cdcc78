import type { ApiError } from './errors.js'
import { unstorableTextError } from './text.js'

/**
 * Numbers a client writes in JSON that the service could not keep as written, refused at every entrance that reads
 * JSON text (HTTP bodies, stream messages, GraphQL) before they reach a store:
 * - an integer no IEEE 754 double holds: JSON.parse turns 123456789012345678901234567890 into a double written back
 *   as 1.2345678901234568e+29, so the service would store, hash into a lineage root and answer a number the client
 *   never sent (RFC 7493, I-JSON, §2.2: integers beyond ±(2^53 − 1) are not interoperable). One the service writes
 *   back as sent is kept: 9007199254740992 (2^53), or 18446744073709552000 as JavaScript writes 2^64, but not
 *   2^64's own digits, 18446744073709551616, nor 2^60's, which come back as 1152921504606847000;
 * - a number beyond a double's range (1e400, or 400 digits): JSON.parse makes it Infinity, which JSON writes as null.
 * A fraction or an exponent is read as the double it denotes, as JSON numbers are (RFC 8259 §6): 0.10000000000000001
 * (C's %.17g of 0.1) is 0.1.
 */

/** The first such number in a JSON text: where (a dotted path, as `findUnstorableText` names places), as written. */
export interface InexactNumber {
  path: string
  literal: string
}

/**
 * Only a text with 16 digits in a row (no integer of 15 digits or fewer is inexact) or an exponent of three digits
 * or more can hold such a number: every other text is passed after one scan by the regular expression engine.
 */
const MAYBE_INEXACT = /\d{16}|[eE][+-]?\d{3}/

const NUMBER = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y

/** Whether a number written as `literal` (JSON's number grammar) would be kept other than as written. */
export function isInexactNumber(literal: string): boolean {
  const value = Number(literal)
  if (!Number.isFinite(value)) return true
  // Every integer of 15 digits or fewer is a double; fractions and exponents are read as doubles.
  if (!/^-?\d{16,}$/.test(literal)) return false
  return BigInt(literal) !== integerWritten(String(value))
}

/** The integer a double's shortest form (`String`, as JSON writes it) denotes: "1.5e+21" is 1500000000000000000000. */
function integerWritten(shortest: string): bigint {
  const [, sign, whole, fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:e\+?(\d+))?$/.exec(
    shortest,
  ) as RegExpExecArray
  const magnitude = BigInt(whole + fraction) * 10n ** BigInt(Number(exponent) - fraction.length)
  return sign ? -magnitude : magnitude
}

interface Frame {
  array: boolean
  /** The key of the member being read (objects) or the index of the item (arrays). */
  at: string | number
}

/**
 * The first number of a valid JSON text (one `JSON.parse` accepted) that `isInexactNumber` refuses, or undefined.
 * A text the fast test clears is not scanned further.
 */
export function findInexactNumber(text: string, path = ''): InexactNumber | undefined {
  if (!MAYBE_INEXACT.test(text)) return undefined
  const stack: Frame[] = []
  let expectKey = false
  // Joined as findUnstorableText joins its paths, so both name a place alike.
  const here = () => stack.reduce((at, f) => (at ? `${at}.${f.at}` : String(f.at)), path)
  for (let i = 0; i < text.length; ) {
    const ch = text[i]
    if (ch === '{' || ch === '[') {
      stack.push({ array: ch === '[', at: ch === '[' ? 0 : '' })
      expectKey = ch === '{'
      i++
    } else if (ch === '}' || ch === ']') {
      // A closed container is a value: what follows is a comma or another close, never a key.
      stack.pop()
      expectKey = false
      i++
    } else if (ch === ',') {
      const top = stack.at(-1)
      if (top?.array) top.at = (top.at as number) + 1
      else expectKey = true
      i++
    } else if (ch === ':') {
      expectKey = false
      i++
    } else if (ch === '"') {
      let end = i + 1
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      const top = stack.at(-1)
      if (expectKey && top) top.at = JSON.parse(text.slice(i, end + 1)) as string
      i = end + 1
    } else if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) {
      NUMBER.lastIndex = i
      const literal = NUMBER.exec(text)?.[0] ?? ch
      if (isInexactNumber(literal)) return { path: here(), literal }
      i += literal.length
    } else i++
  }
  return undefined
}

/** The longest part of the number an error message repeats. */
const SHOWN_DIGITS = 40

/** 400 naming where the number was and why it is refused: the refusal of a value no store keeps as sent. */
export function inexactNumberError(location: string, found: InexactNumber): ApiError {
  return unstorableTextError(location, { path: found.path, message: inexactNumberMessage(found.literal) })
}

/**
 * Why the number written as `literal` is refused. No advice on what to send instead: a free-form value may go as a
 * string, but a typed field (a priority, a stream's `since`) has its own range.
 */
export function inexactNumberMessage(literal: string): string {
  const shown = literal.length > SHOWN_DIGITS ? `${literal.slice(0, SHOWN_DIGITS)}…` : literal
  return Number.isFinite(Number(literal))
    ? `The integer ${shown} cannot be kept exactly: JSON numbers hold integers exactly only up to ±9007199254740991`
    : `The number ${shown} is beyond the range of a JSON number`
}
