import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

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

/** The first line of the coverage helper's inner function in StrykerJS's instrumented preamble (`stryCov_9fa48`). */
const COVER = 'function cover() {'

/**
 * StrykerJS's instrumented code counts, at every mutated statement it runs, the mutants it passed (`stryCov_9fa48`),
 * for the dry run's coverage. A mutant run needs none of it: the runner reads only the active mutant's hit count,
 * which `stryMutAct_9fa48` keeps. So each instrumented module's counting returns at once while
 * `__stryker__.coverageOff` is set (server-switch.mjs sets it while a mutant is active). Returns the module's text
 * so changed, or undefined for a module without the helper.
 */
export function coverageSwitchableText(text, name = 'module') {
  if (!text.includes('function stryCov_9fa48')) return undefined
  if (!text.includes(COVER)) throw new Error(`${name}: StrykerJS's coverage helper has no \`${COVER}\``)
  return text.replace(COVER, `${COVER}\n    if (ns.coverageOff) return;`)
}

/**
 * Every instrumented module under `dir` (a sandbox's compiled dist/) made so; returns how many. None at all means
 * the build is not the sandbox's instrumented one, or Stryker's preamble changed: it throws rather than count on.
 */
export function coverageSwitchable(dir) {
  let changed = 0
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue
    const path = join(entry.parentPath, entry.name)
    const text = coverageSwitchableText(readFileSync(path, 'utf8'), path)
    if (text === undefined) continue
    writeFileSync(path, text)
    changed++
  }
  if (changed === 0) throw new Error(`${dir}: no module instrumented by StrykerJS to switch coverage off in`)
  return changed
}
