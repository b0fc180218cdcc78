/**
 * What a path the contract serves answers, for the 405 of a method it does not (RFC 9110 §15.5.6: the answer names
 * them in Allow). The templates are the contract's (`PATH_METHODS`, generated from its paths); a GET is answered to
 * HEAD too, as Hono serves every GET route.
 */
import { PATH_METHODS } from '../../generated/contract.js'

interface PathRule {
  pattern: RegExp
  allow: readonly string[]
}

/** A template's `{name}` stands for one path segment; everything else is literal. */
function patternOf(template: string): RegExp {
  const parts = template.split(/\{[^/{}]+\}/).map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('[^/]+')}$`)
}

const RULES: PathRule[] = Object.entries(PATH_METHODS).map(([template, methods]) => {
  const allow: string[] = [...methods]
  if (allow.includes('GET') && !allow.includes('HEAD')) allow.splice(allow.indexOf('GET') + 1, 0, 'HEAD')
  return { pattern: patternOf(template), allow }
})

/** The methods a path the contract serves answers (exactly: a trailing slash is another path), else undefined. */
export function allowedMethods(path: string): readonly string[] | undefined {
  return RULES.find((rule) => rule.pattern.test(path))?.allow
}
