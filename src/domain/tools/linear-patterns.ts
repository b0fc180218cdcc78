/**
 * The regular expressions of tools' JSON Schemas (`pattern`, `patternProperties`, `propertyNames`), run on RE2
 * (re2js, its JavaScript port) instead of JavaScript's backtracking engine. A tool's schema is a tenant's text, and
 * a backtracking engine lets one pattern and one short string hold the server's only thread for hours: `^(a+)+$`
 * against forty a's and a "!" took about a second at twenty-five a's and doubles with each more. RE2 matches in time
 * linear in the string, and refuses what it cannot match so (lookaround, backreferences): such a pattern is refused
 * when the tool is registered, not run. Ajv takes the engine through its `code.regExp` option.
 */
import type { CodeOptions } from 'ajv/dist/2020.js'
import { RE2JS } from 're2js'

/** Ajv's engine type and what it makes of a pattern, as its public options name them. */
type RegExpEngine = NonNullable<CodeOptions['regExp']>
type RegExpLike = ReturnType<RegExpEngine>

/**
 * Every escape of a pattern, left to right: a `\u{X…}` or `\uXXXX` escape (its hex digits captured), or any other
 * escaped character, an escaped backslash included (so the `\u0061` in `\\u0061` is text, not an escape).
 */
const ESCAPE = /\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|.)/gs

/**
 * ECMA-262's `\uXXXX` and `\u{X…}` escapes (JSON Schema's patterns are ECMA-262) written as RE2's `\x{…}`; every
 * other escape is left as it is.
 */
export function toRe2Syntax(pattern: string): string {
  return pattern.replace(ESCAPE, (written, braced?: string, plain?: string) => {
    const hex = braced ?? plain
    return hex === undefined ? written : `\\x{${hex}}`
  })
}

/** One pattern compiled by RE2: `test` searches the string as RegExp's does (unanchored). */
class LinearPattern implements RegExpLike {
  private readonly compiled: RE2JS

  constructor(private readonly pattern: string) {
    this.compiled = RE2JS.compile(toRe2Syntax(pattern))
  }

  test(s: string): boolean {
    return this.compiled.matcher(s).find()
  }

  /** Ajv keys its compiled patterns by this text: each pattern needs its own. */
  // Stryker disable next-line BlockStatement: equivalent, without a text Ajv keys the pattern by the object itself, so it shares none (the text only lets one schema's repeated pattern share one compile)
  toString(): string {
    return `/${this.pattern}/`
  }
}

/**
 * Ajv's `code.regExp`: the flags it passes (`u`) are RE2's way already (it matches code points). `code` names the
 * engine in standalone code, which the server never generates.
 */
// Stryker disable next-line ObjectLiteral,StringLiteral: equivalent, Ajv reads `code` only when it writes standalone validation code, which the server never does
const code = { code: 'linearPatterns' }
export const linearPatterns: RegExpEngine = Object.assign(
  (pattern: string) => new LinearPattern(pattern),
  code,
)
