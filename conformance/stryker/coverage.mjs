/**
 * Stryker's mutant coverage (`{ static, perTest }`, hit counts by mutant id) added together: what the server's
 * issuer thread recorded into the server's own (server-switch.mjs), and each dry-run server's into the dry run's
 * (switch-runner.mjs).
 */

/** Adds `from` (nothing when undefined) to `into`, in place, summing the hits per mutant; returns `into`. */
export function addCoverage(into, from) {
  if (!from) return into
  const add = (to, counts) => {
    for (const [id, n] of Object.entries(counts ?? {})) to[id] = (to[id] ?? 0) + n
  }
  add(into.static, from.static)
  for (const [testId, counts] of Object.entries(from.perTest ?? {})) {
    into.perTest[testId] ??= {}
    add(into.perTest[testId], counts)
  }
  return into
}
