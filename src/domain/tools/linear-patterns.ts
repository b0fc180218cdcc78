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
 * ECMA-262's `\uXXXX` and `\u{X…}` escapes (JSON Schema's patterns are ECMA-262) written as RE2's `\x{…}`; every
 * other escape is left as it is, an escaped backslash included.
 */
export function toRe2Syntax(pattern: string): string {
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c !== '\\' || i + 1 >= pattern.length) {
      out += c
      continue
    }
    const next = pattern[i + 1]
    if (next === 'u') {
      const braced = /^\{([0-9A-Fa-f]{1,6})\}/.exec(pattern.slice(i + 2))
      const plain = /^[0-9A-Fa-f]{4}/.exec(pattern.slice(i + 2))
      if (braced) {
        out += `\\x{${braced[1]}}`
        i += 1 + braced[0].length
        continue
      }
      if (plain) {
        out += `\\x{${plain[0]}}`
        i += 1 + plain[0].length
        continue
      }
    }
    out += c + next
    i++
  }
  return out
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
  toString(): string {
    return `/${this.pattern}/`
  }
}

/**
 * Ajv's `code.regExp`: the flags it passes (`u`) are RE2's way already (it matches code points). `code` names the
 * engine in standalone code, which the server never generates.
 */
// Stryker disable next-line ObjectLiteral,StringLiteral: equivalent, Ajv reads `code` only when it writes standalone validation code, which the server never does
export const linearPatterns: RegExpEngine = Object.assign((pattern: string) => new LinearPattern(pattern), {
  code: 'linearPatterns',
})
