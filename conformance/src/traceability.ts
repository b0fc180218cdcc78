/**
 * Reads conformance/traceability.md: one table row per normative statement of the spec (`| S5.2 | text | ids |`).
 * A statement is covered when at least one of its check ids exists.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from './config.js'

export interface Statement {
  id: string
  text: string
  checks: string[]
}

export function parseTraceability(markdown: string): Statement[] {
  const out: Statement[] = []
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*(S\d+(?:\.\d+)+)\s*\|(.*)\|(.*)\|\s*$/.exec(line)
    if (!m) continue
    const checks = [...(m[3] ?? '').matchAll(/`([a-z0-9-]+\.[a-z0-9.-]+)`/g)].map((x) => x[1]!)
    out.push({ id: m[1]!, text: (m[2] ?? '').trim(), checks })
  }
  return out
}

export function coverage(
  statements: Statement[],
  knownIds: Set<string>,
): { statements: number; covered: number; unknown: string[] } {
  const unknown = new Set<string>()
  let covered = 0
  for (const s of statements) {
    const known = s.checks.filter((c) => knownIds.has(c))
    for (const c of s.checks) if (!knownIds.has(c)) unknown.add(c)
    if (known.length > 0) covered++
  }
  return { statements: statements.length, covered, unknown: [...unknown] }
}

export function loadTraceability(path = join(REPO_ROOT, 'conformance', 'traceability.md')): Statement[] {
  try {
    return parseTraceability(readFileSync(path, 'utf8'))
  } catch {
    return []
  }
}
