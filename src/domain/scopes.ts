/**
 * Scopes are `resource:action` strings. A key holding `*` may do anything; `resource:*` (or any prefix ending in
 * `:*`, e.g. `stream:connector:*`) covers everything below it.
 */
export function scopeAllows(held: readonly string[], required: string): boolean {
  for (const scope of held) {
    if (scope === '*' || scope === required) return true
    if (scope.endsWith(':*') && required.startsWith(scope.slice(0, -1))) return true
  }
  return false
}
